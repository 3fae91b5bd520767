#!/usr/bin/env bash
# Session 38's third plan, for the ~300 device seconds left after failed starts (second.sh's quick
# gpu-check does not fit): the branch at 5a4269c (the gate/up box in the swapped kernel only). The
# grouped-GEMM forced-path test (its one-box rows' bits against the per-box rows'), Auto's Qwen3-30B-A3B
# table fp8 and bf16 (the H200 column), DeepSeek-V3 full fp8 at one and eight tokens, the model's decode
# step, the 128-pair kernel's switch off against on, and the swapped kernel's pair ids an item ahead
# (MOE_WGMMA_SWAP_AHEAD, off by default) off against on. Carry: .carry/s38-gc.tar.xz (the branch at the
# commit that added MOE_WGMMA_SWAP_AHEAD).
set -uo pipefail
export END=${END:-170}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s38-gc.tar.xz || exit 1
timeout "$(cap 40 100)" $B/cuda_forced_paths_test --gtest_color=no --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' \
  > $R/forced-paths.log 2>&1
echo "forced paths rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|pair ids ahead fp8_block\] M=400 " $R/forced-paths.log | head -8
timeout "$(cap 60 40)" $B/moe bench --shapes qwen3-30b-a3b --formats fp8_block,bf16 --json $R/bench-qwen3-30b.json \
  > $R/bench.log 2>&1
timeout "$(cap 20 30)" $B/moe bench --shapes deepseek-v3 --formats fp8_block --M 1,8 --json $R/bench-deepseek.json \
  >> $R/bench.log 2>&1
echo "bench t=$(el)"
grep -E "^(qwen|deepseek)|read|bandwidth" $R/bench.log | head -40
pack
timeout "$(cap 30 15)" $B/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 \
  > $R/model-bench.log 2>&1
grep -iE "decode|floor" $R/model-bench.log | head -6
pack
env_ab_rows $R/ahead-ab.log MOE_WGMMA_SWAP_AHEAD "0 1" $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block,bf16 --M 64,128,256
pivot_rows $R/ahead-ab.log
pack
env_ab_rows $R/box-ab.log MOE_WGMMA_PAIRS_GATE_UP_BOX "0 1" $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 1024,4096
pivot_rows $R/box-ab.log
pack
echo "done t=$(el)"
