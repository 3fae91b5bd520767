#!/usr/bin/env bash
# Session 27, first call (from branch next/s27b: check it out first; the call runs the working tree). The branch
# is next/s27 (the epilogue changes built in session 26, NOT RUN ON A GPU: bf16 pairs by one cvt, stage 2's
# stores choosing format and bias once per row, __expf / __fdividef in the gated activation, stage 1's SiLU
# epilogue per row) plus staged outputs behind MOE_WGMMA_STAGED (off by default): the consumer warps write their
# fragments to their own 16 rows in shared memory and store whole 16-byte chunks of rows (stage 2's bf16 y,
# ring 5 slots + 32 KB; stage 1's h or h codes).
# Steps: the codec and grouped-GEMM rows tests (the staged rows among them); the A/B of main's moe, the branch's
# and the branch's with MOE_WGMMA_STAGED=1 (ops M=1..4096, DeepSeek-V3 full at M=4096, the model's decode and
# prefill); staged with h quantised in stage 1's epilogue (MOE_WGMMA_QUANT_H=1, measured slower unstaged in
# session 15: its 2-byte code stores are what staging replaces).
# Carry: .carry/s27b-gpu.tar.xz (scripts/pack-gpu-carry build at the branch) and .carry/main-7d9d9ae-moe.tar.xz.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s27b-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/main-7d9d9ae-moe.tar.xz
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_forced_paths_test \
  --gtest_filter='*Bf16PackGpu*:*Fp8CodecsGpu*:*GroupedGemmOnWgmmaAndMmaSync*' > $R/rows-tests.log 2>&1
echo "codec and grouped GEMM rows rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|staged.*M=400 " $R/rows-tests.log | head -16
pack
side_env() {  # the environment of each side: main's binary, the branch's, the branch's staged
  case $1 in
    staged) echo MOE_WGMMA_STAGED=1 ;;
    staged-qh) echo MOE_WGMMA_STAGED=1 MOE_WGMMA_QUANT_H=1 ;;
    *) echo MOE_NONE=0 ;;
  esac
}
side_bin() { [ "$1" = main ] && echo /tmp/m/bin/moe || echo /tmp/n/bin/moe; }
for round in 1 2; do
  for side in main branch staged staged-qh; do
    [ "$(el)" -gt 200 ] && break
    # shellcheck disable=SC2046
    env $(side_env $side) timeout 60 "$(side_bin $side)" bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 \
      --formats fp8_block,bf16 --M 1,8,64,256,1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" |
      sed "s/^/round=$round $side /"
  done
done > $R/ab-ops.log
awk '$5 == 1 || $5 >= 1024' $R/ab-ops.log | cut -c1-120
echo "ops a/b t=$(el)"
pack
for side in branch staged; do
  # shellcheck disable=SC2046
  env $(side_env $side) timeout 60 /tmp/n/bin/moe bench --shapes deepseek-v3 --formats fp8_block,bf16 --M 4096 2>&1 |
    grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/$side /"
done > $R/ab-dsv3.log
cut -c1-120 $R/ab-dsv3.log
echo "deepseek-v3 a/b t=$(el)"
pack
for round in 1 2; do
  for side in main branch staged; do
    [ "$(el)" -gt $((END - 45)) ] && break
    # shellcheck disable=SC2046
    env $(side_env $side) timeout 60 "$(side_bin $side)" bench --random-shape qwen3-30b-a3b --format fp8_block \
      --batches 1,8,64 2>&1 | grep -E "^ *(decode|prefill)|rror" | sed "s/^/round=$round $side /"
  done
done > $R/ab-model.log
cat $R/ab-model.log
echo "model a/b t=$(el)"
pack
echo "done t=$(el)"
