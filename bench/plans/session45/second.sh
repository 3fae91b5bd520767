#!/usr/bin/env bash
# Session 45's second call (carry .carry/s45b.tar.xz, main's build at b1b1462: Auto's new threshold by
# intermediate size; .carry/s45b-old38.tar.xz; .carry/s45c-ring.tar.xz): what the first call (an H100)
# found, asked of the H200. Auto's path crossover on all four swapped-kernel shapes, both formats, 2 to 64
# tokens (the H100 had Qwen3-30B-A3B bf16's grouped GEMM ahead from 8 tokens, 171.6 vs 177.0 us, and fp8's
# from 24; Qwen3-235B-A22B TP8 bf16's from 24); stage 2 taking its runs against fixed shares from 128 to 512
# tokens (both cards had Qwen3-235B-A22B TP8 fp8 M=256 ~3.5 % faster taking them, every other short-K row
# level or slower); the hidden take on this card; the quick gpu-check of b1b1462 (the H200's column); the 128-pair kernel's M=1024 and 4096 from session 38's main
# (5a4269c, .carry/s45b-old38.tar.xz: bin/moe-38) against today's, alternated, same lease (the H200's M=4096
# measured 653.8 us in session 44 against 633.7-637 in session 38).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s45b.tar.xz}" "${OLD:-.carry/s45b-old38.tar.xz}" || exit 1
clocks_start $R/clocks.log
quick_gpu_check $B 60
PT_PATHS=mma,swap-ab path_thresholds $B/moe \
  qwen3-30b-a3b,qwen3-235b-a22b-tp8,qwen3-next-80b-a3b,deepseek-v3-tp8 fp8_block,bf16 2,4,8,12,16,24,32,48,64 5
grep -vE "^path-thresholds:" $R/path-thresholds.log
if [ -x $B/moe-38 ]; then
  echo "# ab_op_rows' labels: main = session 38's binary (5a4269c), new = this carry's" > $R/old38-ab.log
  ab_op_rows $B/moe-38 $B/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 64,1024,4096 >> $R/old38-ab.log
  cat $R/old38-ab.log
fi
pack
# Since session 38 the 128-pair kernel's calls changed by default in two ways a switch undoes: the tile list
# from the grouping (session 39) and y in bf16 at every M (session 40).
bench_ab $R/m4096-ab.log MOE_GROUPING_TILES 1,0 $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 4096
bench_ab $R/m4096-ab.log MOE_GROUPED_Y_BF16 1,0 $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 4096
bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe \
  --shapes qwen3-235b-a22b-tp8,qwen3-30b-a3b,qwen3-next-80b-a3b,deepseek-v3-tp8 --formats fp8_block \
  --M 64,128,192,256,384,512
bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe --shapes qwen3-235b-a22b-tp8 --formats bf16 --M 64,256
pack
MOE_WGMMA_TAKE_RUNS=1 bench_ab $R/hidden-ab.log MOE_WGMMA_TAKE_HIDDEN 0,1 $B/moe \
  --shapes deepseek-v3-tp8,qwen3-30b-a3b,qwen3-next-80b-a3b --formats fp8_block --M 64,256
bench_ab $R/hidden-ab.log MOE_WGMMA_TAKE_HIDDEN 0,1 $B/moe --shapes deepseek-v3 --formats fp8_block --M 64,256
# The swapped kernel's ring capped (measuring builds "MOE_SWAP_RING_SLOTS=N", .carry/s45c-ring.tar.xz:
# bin/moe-ring4, bin/moe-ring6, bin/moe-cycles-ring4; swap_tile_loader.cuh says why), and its largest pair
# tile (MOE_WGMMA_SWAP_MAX_TILE, 32 by default) where stage 2 is bound by its consumers.
tar -C /tmp/carry -xJf "${RING:-.carry/s45c-ring.tar.xz}" 2>/dev/null || echo "no ring builds"
for n in 6 4; do
  [ -x $B/moe-ring$n ] && [ "$(cap 120 0)" -ge 120 ] || continue
  ab_op_rows $B/moe $B/moe-ring$n --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 16,64,256 > $R/ring$n-ab.log
  ab_op_rows $B/moe $B/moe-ring$n --shapes qwen3-next-80b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
    --formats fp8_block --M 64,256 >> $R/ring$n-ab.log
  pivot_rows $R/ring$n-ab.log
  pack
done
bench_ab $R/max-tile-ab.log MOE_WGMMA_SWAP_MAX_TILE 32,16,64 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 128,256
clocks_stop
pack
if [ -x $B/moe-cycles-ring4 ] && [ -x $B/moe-cycles ] && [ "$(cap 40 0)" -ge 40 ]; then
  for bin in moe-cycles moe-cycles-ring4; do
    timeout "$(cap 30 0)" $B/$bin bench --shapes qwen3-30b-a3b --formats fp8_block --M 256 > $R/cycles-$bin.log 2>&1
    echo "$bin"; grep -A10 "swapped grouped GEMM cycles" $R/cycles-$bin.log
  done
fi
pack
echo "done t=$(el)"
