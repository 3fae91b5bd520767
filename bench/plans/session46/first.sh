#!/usr/bin/env bash
# Session 46's first call with the tail rule (carry .carry/s46a.tar.xz, main's build with stage 2 taking its
# runs where stage 1's fixed shares leave a tail, MOE_WGMMA_TAKE_AT_TAIL, expert_mma.h): its GPU test and the
# grouped-GEMM forced paths first, then the rule off / on (0 / 8 %) where session 46's first call measured
# taking 1.5-15 % faster (Qwen3-235B-A22B TP8 and Qwen3-30B-A3B fp8 at 192 and 384 tokens) and where it lost
# (Qwen3-Next, DeepSeek-V3 TP8), then the quick gpu-check with what time is left.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46a.tar.xz}" || exit 1
clocks_start $R/clocks.log
timeout "$(cap 90 0)" $B/cuda_forced_paths_test --gtest_color=no \
  --gtest_filter='*TakeAtTail*:*GroupedGemmOnWgmmaAndMmaSync*' > $R/forced-paths.log 2>&1
echo "forced paths rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|take at tail|DIFFER" $R/forced-paths.log | head -24
pack
bench_ab $R/tail-ab.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8,qwen3-30b-a3b \
  --formats fp8_block --M 128,192,256,320,384,448
pack
bench_ab $R/tail-ab.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-next-80b-a3b,deepseek-v3-tp8 \
  --formats fp8_block --M 64,192,384
bench_ab $R/tail-ab.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8,qwen3-30b-a3b \
  --formats bf16 --M 192,384
clocks_stop
pack
quick_gpu_check $B 5
pack
echo "done t=$(el)"
