#!/usr/bin/env bash
# Session 37's first plan (written at the end of session 36, which got one H100 call): on an H200, the quick
# gpu-check the H200 column of docs/performance.md has waited for since session 32; then (added in session 37)
# Auto's fp8 and bf16 paths forced against each other from 8 to 128 tokens; then where Auto's
# one-token stages stall with the caches kept (ncu, NCU_CACHE_CONTROL none against all: the icache probe put
# first-time code at ~40-60 ns per KB on an idle SM); then, for the H200's mid-M gap (M=16..256 at 1.5-1.9x
# the floor against 1.17-1.32x on an H100, same kernels), the swap-AB stages' per-block timeline at 16 and 48
# tokens and (session 37) the swapped grouped GEMM's stages alone under ncu at 64 and 256. Carry: .carry/s37-gpu.tar.xz (main's
# binaries at dac7006's kernels as scripts/pack-gpu-carry packs them, plus bin/moe-measuring:
# scripts/build-measuring "MOE_SWAP_AB_TIMELINE;MOE_WGMMA_CYCLES").
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s37-gpu.tar.xz /tmp/carry
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
B=/tmp/carry/bin
quick_gpu_check $B "${GC_RESERVE:-200}"
pack
# Auto's path thresholds were all measured on H100s; on the H200 fp8 runs at 1.5-1.9x its floor from 16 to
# 256 tokens where bf16 runs at 1.16-1.27x: the swap-AB stages' fp8 mma.sync is emulated through f16
# conversions (ALU a weight byte) that a faster memory may expose. Both paths forced, each M.
if [ "$(cap 100 150)" -ge 60 ]; then
  PT_SHAPES=qwen3-30b-a3b PT_FORMATS=fp8_block,bf16 PT_M=8,16,24,32,48,64,128 timeout "$(cap 100 150)" \
    scripts/path-thresholds $B/moe > $R/path-thresholds.log 2>&1
  echo "path thresholds rc $?"
  grep -vE "^path-thresholds:" $R/path-thresholds.log | tail -16
  pack
fi
for m in 16 48; do
  [ "$(cap 25 30)" -lt 25 ] && break
  MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 30 30)" $B/moe-measuring bench --shapes qwen3-30b-a3b --formats fp8_block \
    --M $m --paths auto > $R/swtl-m$m.log 2>&1
  echo "swap-AB timeline M=$m rc $?"
  grep -E "^qwen3|stage" $R/swtl-m$m.log | tail -14
  pack
done
# The swapped grouped GEMM (Auto's kernel from 64 to ~384 tokens here; MOE_WGMMA_CYCLES does not cover it):
# each stage's time and DRAM bytes alone under ncu, fp8 against bf16. fp8's stage-1 weight tile is 16
# tensor-map boxes of 1 KB a step from one thread (bf16: cp.async by 128), and session 15 put a box's issue
# at ~50 cycles: 800 cycles a 16 KB step is ~20 B a cycle an SM, about what the H200's floor needs.
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for fmt in fp8_block bf16; do
  [ "$(cap 40 20)" -lt 30 ] && break
  timeout "$(cap 40 20)" "$ncu" --clock-control none -k regex:wgmma_swap --launch-count 16 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum $B/moe bench --shapes qwen3-30b-a3b \
    --formats $fmt --M 64,256 --copies 2 > $R/swap-gemm-ncu-$fmt.log 2>&1
  echo "swap GEMM ncu $fmt rc $?"
  grep -E "expert_wgmma_swap_kernel|gpu__time|dram__bytes" $R/swap-gemm-ncu-$fmt.log | sed -E 's/\(MmaKernelArgs.*//' | head -48
  pack
done
pack
one_token_stalls $B/moe 10 "21 none" "21 all" "20 none"
pack
echo "done t=$(el)"
