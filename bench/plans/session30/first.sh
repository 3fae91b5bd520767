#!/usr/bin/env bash
# Session 30, first call. Carries: .carry/s30b-gpu.tar.xz (branch next/s30-bias at acb2f53, NOT RUN ON A GPU:
# (a) SigmoidGrouped's selection biases loaded together before the sigmoids; inside their loop each waited for
# its own round trip, 8 in a row on DeepSeek's routing warp, because ptxas hoists no load across the
# division's slow-path branch: SASS at b365f3d had LDG bias, MUFU.EX2, MUFU.RCP per expert slot; (b) the
# model's norms (decode GEMV, router kernel) load a batch's x and residuals first, then add: the SASS had
# each element's LDGs right before its FADD, 8 round trips in a row after the wait, in both norms of every
# decode layer; (c) merge_top2_xor and warp_store_fp8_group, one copy each of code the routing and the
# prologue's quantisation had twice, slightly other SASS) and .carry/s30-main-moe.tar.xz (main's bin/moe at b365f3d).
#  1. the DeepSeek shape's GPU tests on the branch;
#  2. main against the branch, DeepSeek-V3 TP8 and full fp8 / bf16 at M = 1..8, two rounds; the one-block
#     prologue's time under ncu (b365f3d: 12.8-13.0 us at one token); the model's decode step (Qwen3-30B-A3B
#     fp8, batches 1 and 8), the two binaries alternated three times (main: batch 1 2.66-2.70 ms on H100s);
#  3. gpu-check of the branch (its benchmarks give the H200 column if the card is one).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30b-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s30-main-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
timeout "$(cap 90 400)" /tmp/n/bin/cuda_fused_moe_test --gtest_filter='*deepseek*' > $R/tests-deepseek.log 2>&1
echo "tests rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED) " $R/tests-deepseek.log | head -4
{
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3-tp8 --formats fp8_block,bf16 --M 1,2,4,8
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
} > $R/ab-bias.log
cut -c1-90 $R/ab-bias.log | grep -E " (1|8) "
prologue_ncu deepseek-v3-tp8 /tmp/m/bin/moe /tmp/n/bin/moe | tee $R/prologue-times.log
binaries_ab $R/decode-ab.log /tmp/n/bin/moe /tmp/m/bin/moe 3
echo "a/b t=$(el)"
pack
quick_gpu_check /tmp/n/bin 5
grep -E "^deepseek-v3 " $R/gc/bench.log | head -2
pack
echo "done t=$(el)"
