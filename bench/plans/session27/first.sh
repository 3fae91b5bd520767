#!/usr/bin/env bash
# Session 27, first call, from branch next/s27 (check it out first: the call runs the working tree). Main is at
# 7d9d9ae (session 26 put the wgmma grouped GEMM's item loads ahead, h by sorted position and the uniform column
# scales on by default, measured on an H100 only). The branch adds, NOT RUN ON A GPU:
#  - bf16 pairs packed by one cvt.rn.bf16x2.f32 (f32x2_to_bf16x2) in the epilogues and the combine, and the
#    wgmma kernel's stage-2 stores with the format and bias chosen once per tile row (store_y_row): the
#    cycle accounting had stage 2's epilogue at 44 % of its consumer time, ~33 SASS instructions per output pair;
#  - the gated activation by __expf and __fdividef (stage 1's epilogue had 64 division calls), and stage 1's
#    SiLU-without-bias epilogue with the kind and bias decided once per tile row (52 -> 23 SASS instructions
#    per output pair);
#  - review changes: stage 1's output rows by position without the sorted_pairs load, one stage-1 row store,
#    the skew knobs removed (session 26 measured no change from them).
# Steps: the codec and grouped-GEMM rows tests; the A/B of main's moe against the branch's (ops and model);
# gpu-check at the branch (what must pass before it lands); each switch off against the three on (session 26
# never measured the combination without the item loads ahead; DeepSeek-V3 full bf16 M=4096 was 4.4 % slower
# with them on); the cycle accounting at the branch.
# Carry: .carry/s27a-gpu.tar.xz (scripts/pack-gpu-carry build at the branch's fb01bfb), .carry/main-7d9d9ae-moe.tar.xz
# (main's bin/moe) and .carry/cycles-s27a.tar.xz (the branch's bin/moe with -DMOE_WGMMA_CYCLES in expert_wgmma.cu).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s27a-gpu.tar.xz /tmp/n
mkdir -p /tmp/m /tmp/c && tar -C /tmp/m -xJf .carry/main-7d9d9ae-moe.tar.xz && tar -C /tmp/c -xJf .carry/cycles-s27a.tar.xz
record_gpu $R/gpu.txt
timeout 120 /tmp/n/bin/cuda_forced_paths_test \
  --gtest_filter='*Bf16PackGpu*:*Fp8CodecsGpu*:*GroupedGemmOnWgmmaAndMmaSync*' > $R/rows-tests.log 2>&1
echo "codec and grouped GEMM rows rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|all three.*M=400 " $R/rows-tests.log | head -12
pack
for round in 1 2; do
  for side in main branch; do
    bin=/tmp/n/bin/moe
    [ $side = main ] && bin=/tmp/m/bin/moe
    timeout 60 $bin bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block,bf16 \
      --M 1,8,64,256,1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round $side /"
  done
done > $R/ab-ops.log
cat $R/ab-ops.log | awk '$5 == 1 || $5 >= 1024' | cut -c1-110
echo "ops a/b t=$(el)"
pack
# The model: decode at batches 1, 8 and 64 and the 2048-token prefill (its MoE is on the grouped GEMM).
for round in 1 2; do
  for side in main branch; do
    bin=/tmp/n/bin/moe
    [ $side = main ] && bin=/tmp/m/bin/moe
    timeout 60 $bin bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8,64 2>&1 |
      grep -E "^ *(decode|prefill)|rror" | sed "s/^/round=$round $side /"
  done
done > $R/ab-model.log
cat $R/ab-model.log
echo "model a/b t=$(el)"
pack
quick_gpu_check /tmp/n/bin 150  # (150 s kept for the rest)
pack
for round in 1 2; do
  for off in none MOE_WGMMA_AHEAD=0 MOE_WGMMA_H_BY_POSITION=0 MOE_WGMMA_UNIFORM_SCALES=0; do
    [ "$(el)" -gt $((END - 60)) ] && break
    env ${off/none/MOE_NONE=0} timeout 40 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
      --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round off=$off /"
    [ "$off" = MOE_WGMMA_UNIFORM_SCALES=0 ] && continue  # (fp8 only: no bf16 row below)
    env ${off/none/MOE_NONE=0} timeout 40 /tmp/n/bin/moe bench --shapes deepseek-v3 --formats bf16 --M 4096 2>&1 |
      grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round off=$off /"
  done
done > $R/switches-ab.log
cat $R/switches-ab.log | cut -c1-110
echo "switches a/b t=$(el)"
pack
for fmt in fp8_block bf16; do
  [ "$(el)" -gt $((END - 25)) ] && break
  timeout 20 /tmp/c/bin/moe bench --shapes qwen3-30b-a3b --formats $fmt --M 4096 > "$R/cycles-$fmt.log" 2>&1
  echo "cycles $fmt rc $? t=$(el)"
  grep -E "^qwen|stage [12]" "$R/cycles-$fmt.log" | cut -c1-300
  pack
done
echo "done t=$(el)"
