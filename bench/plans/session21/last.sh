#!/usr/bin/env bash
# Session 21, fourth call: the decode norm in rms_norm_kernel's 256-thread layout in every block size (the
# third call's new test found the 16-warp compact GEMV's norm changed the bits; the router_prologue kernel's
# 16-warp blocks summed the same way), then the 16-warp compact GEMV on and off, gpu-check at this commit, and
# the TP CLI on Qwen3-30B-A3B alone (its TP 8 greedy tokens diverged in the third call). Carry:
# .carry/s21-last.tar.xz (scripts/pack-gpu-carry build).
set -uo pipefail
export END=585 # the call's 600 s, less the packing (gpu-env.sh's cap)
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s21-last.tar.xz /tmp/n
record_gpu $R/gpu.txt
timeout 120 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_gemv*:cuda_model_router*' > $R/gemv-test.log 2>&1
echo "gemv tests rc $? t=$(el)"
grep -E -A3 "^\[  (FAILED|PASSED)|Failure" $R/gemv-test.log | head -12
decode_ab /tmp/n/bin/moe $R/ab-wide.log MOE_GEMV_WIDE 1 0 1 0 1 0
pack
quick_gpu_check /tmp/n/bin
pack
TP_CHECK_MODELS=q30 timeout "$(cap 240 5)" python3 scripts/tp-gpu-check /tmp/n/bin/moe $R/tp > $R/tp.log 2>&1
echo "tp-gpu-check q30 rc $? t=$(el)"
grep -E "TP [0-9]|FAIL" $R/tp.log | tail -12
rm -rf $R/tp # generated checkpoints: too large to bring back
pack
echo "done t=$(el)"
