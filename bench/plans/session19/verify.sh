#!/usr/bin/env bash
# Session 18's new defaults (fp8 pairs before the wait; y in bf16 from 1024 tokens) on the GPU: gpu-check's
# tests and cases (no benches), then the MoE op at the defaults. Carry: .carry/s18b-gpu.tar.xz (scripts/pack-gpu-carry
# at c2064c1 or later), this script as .carry/verify18.sh.   Run: bash .carry/verify18.sh
set -uo pipefail
R=/tmp/r4; mkdir -p $R/gc
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s18b-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
GPU_CHECK_QUICK=1 GPU_CHECK_NO_TP=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout 300 scripts/gpu-check > $R/gc/gc.log 2>&1
echo "gpu-check rc $?"
grep -E "^\[  FAILED" $R/gc/gpu-tests.log | head
sed -n '/== summary/,$p' $R/gc/gc.log | head -12
timeout 120 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 --formats fp8_block \
  --M 1,8,64,1024,4096 2>&1 | grep -E "^(#|shape|qwen|deepseek)" | tee $R/bench-defaults.log
tar -C /tmp -czf $OUT/r4.tgz --exclude=r4/gc/cases --exclude=r4/gc/fixtures r4
