#!/usr/bin/env bash
# Session 33, third call. Carry: .carry/s33d-gpu.tar.xz (every test binary; main: the one-token x staging and the per-stage L2
# requests taken out again, the shared warm's 16 MB where the joint wave is on, and `moe bench --read-sweep`:
# the read bandwidth by bytes in flight per SM, for contiguous 4 KB steps and for the swap-AB stages' 32-row
# steps at Qwen3-30B-A3B's and DeepSeek-V3's stage-1 row pitch). The sweep first (the question behind the
# H200's 73 % on DeepSeek-V3 full: does 64 KB in flight per SM reach 4.5 TB/s there?), then the quick
# gpu-check of main, then on an H200 Auto's path thresholds at 64-256 tokens and L2 requests ahead.
set -uo pipefail
export END=${END:-420}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s33d-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
timeout 120 $M bench --read-sweep > $R/read-sweep.log 2>&1
echo "read sweep rc $?"
grep -v "^read sweep" $R/read-sweep.log
pack
quick_gpu_check /tmp/n/bin 150
pack
if grep -q H200 $R/gpu.txt; then
  PT_SHAPES=qwen3-30b-a3b PT_FORMATS=fp8_block PT_M=64,128,256 timeout "$(cap 90 40)" scripts/path-thresholds $M \
    > $R/paths.log 2>&1
  cat $R/paths.log
  pack
  env_ab_rows $R/ahead.log MOE_SWAP_AB_L2_AHEAD "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
  pivot_rows $R/ahead.log
fi
pack
echo "done t=$(el)"
