#!/usr/bin/env bash
# Session 33, first call. Carry: .carry/s33a-gpu.tar.xz (main at 2c90775, as session 32 left it, without the
# TP test binaries, with a MOE_SWAP_AB_TIMELINE measuring build as bin/moe-measuring). Quick gpu-check, the
# swap-AB stages' timeline at one token, then on any card the shared warm's size with the joint wave on (DeepSeek-V3), and on an H200:
# Auto's path thresholds (set from H100 rows; the H200's grouped GEMM is at 1.6-1.9x its floor at 64-256
# tokens), ncu's per-kernel times at one token, and the session-32 defaults against the old.
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s33a-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
quick_gpu_check /tmp/n/bin 200
pack
# The swap-AB stages' per-block phases at one token (measuring build: stamps compiled in).
for s in qwen3-30b-a3b deepseek-v3; do
  MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 40 30)" /tmp/n/bin/moe-measuring bench --shapes $s --formats fp8_block \
    --M 1 --paths auto > $R/swtl-$s.log 2>&1
  echo "timeline $s rc $?"
  grep -v "^ *[0-9]" $R/swtl-$s.log | tail -30
done
pack
if grep -q H200 $R/gpu.txt; then
  PT_SHAPES=qwen3-30b-a3b PT_FORMATS=fp8_block,bf16 PT_M=32,48,64,96,128,192,256,384 \
    timeout "$(cap 150 60)" scripts/path-thresholds $M > $R/paths.log 2>&1
  cat $R/paths.log
  pack
  for s in qwen3-30b-a3b deepseek-v3; do
    OPK_COUNT=8 timeout "$(cap 40 30)" scripts/op-kernel-times $s fp8_block 1 $M > $R/kt-$s.log 2>&1
    cat $R/kt-$s.log | tail -9
  done
  pack
fi
env_ab_rows $R/warm.log MOE_SHARED_WARM_KB "8192 16384" $M --shapes deepseek-v3 --formats fp8_block \
  --M 1 --copies 3
pivot_rows $R/warm.log
pack
if grep -q H200 $R/gpu.txt; then
  # The H200 stream looked bound by its bytes in flight (routed stages at ~73 % of 4.5 TB/s against the
  # H100's ~88 % of 3.1): L2 requests ahead add some without registers (slower on the H100).
  env_ab_rows $R/defaults.log MOE_SWAP_AB_L2_AHEAD "0 1 2" $M --shapes deepseek-v3 --formats fp8_block --M 1 \
    --copies 3
  env_ab_rows $R/defaults.log MOE_SWAP_AB_L2_AHEAD "0 1 2" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
    --M 1,8
  pivot_rows $R/defaults.log
fi
pack
echo "done t=$(el)"
