#!/usr/bin/env bash
# Session 31, seventh call (~300 s of device time left). Carry: .carry/s31g-gpu.tar.xz (branch
# next/s31-stage2-combine with stage 2's combine on by default for one-token calls, MOE_SWAP_AB_COMBINE=1; the
# sixth call's gpu-check ran every path with it on up to 8 tokens and passed). The GPU tests that exercise it
# (fused, forced paths, model), the op and the decode step at its default.
set -uo pipefail
export END=${END:-240}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s31g-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
for t in cuda_fused_moe_test cuda_model_test cuda_forced_paths_test; do
  timeout "$(cap 90 40)" /tmp/n/bin/$t --gtest_color=no > $R/$t.log 2>&1
  echo "$t rc $? t=$(el)"
  grep -E "^\[  FAILED|^\[  PASSED" $R/$t.log | head -4
done
pack
op_rows "default" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,8 | tee $R/op.log
timeout 30 $M bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 |
  grep -E "^ *decode|rror" | tee $R/decode.log
pack
echo "done t=$(el)"
