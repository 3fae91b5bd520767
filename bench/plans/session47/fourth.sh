#!/usr/bin/env bash
# Session 47, third.sh cut to the device time left (~200 s): stage 1 taking its runs (MOE_WGMMA_STAGE1_TAKE,
# default 1 where its runs are unequal) checked and measured. Carry .carry/s47b.tar.xz (main's build with it).
# The new GPU test and the tail rule's, every fused-MoE GPU test (all four shapes at every M with the new
# default: Qwen3-235B-A22B TP8 fp8 now takes stage 1's runs), then the A/B where it applies and, always (2),
# on Qwen3-30B-A3B fp8 at 256 tokens.
set -uo pipefail
export END=${END:-210}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s47b.tar.xz}" || exit 1
pack_every 15
timeout "$(cap 40 150)" $B/cuda_forced_paths_test --gtest_color=no \
  --gtest_filter='Stage1TakeGpu.*:TakeAtTailGpu.*' > $R/stage1-take-test.log 2>&1
echo "stage 1 take test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|stage 1 take|take at tail" $R/stage1-take-test.log | head -16
timeout "$(cap 90 90)" $B/cuda_fused_moe_test --gtest_color=no > $R/fused-moe-test.log 2>&1
echo "fused moe test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|tests ran" $R/fused-moe-test.log | head -12
pack
timeout "$(cap 70 15)" $B/moe bench --shapes qwen3-235b-a22b-tp8 --formats fp8_block --M 192,256,384 \
  --env-ab MOE_WGMMA_STAGE1_TAKE=0,1 --rounds 2 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" > $R/stage1-take-ab.log
timeout "$(cap 40 3)" $B/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 256 \
  --env-ab MOE_WGMMA_STAGE1_TAKE=0,2 --rounds 2 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" >> $R/stage1-take-ab.log
awk 'NF >= 12 { k = $1 " " $2 " M=" $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
                v[k] = v[k] " " $11 "/" $12 " " $4 }
     END { for (i = 1; i <= n; ++i) print order[i] ":" v[order[i]] }' $R/stage1-take-ab.log
stop_packing
pack
echo "done t=$(el)"
