#!/usr/bin/env bash
# Session 29, third call: the landing candidate. Carries: .carry/s29f-gpu.tar.xz (next/s29-routing at 1102373:
# the bench's DeepSeek layers without a gate, the gate's loads batched, SigmoidGrouped's own instantiation,
# the prologue's quantisation loads batched, the single-block grouping up to 2048 pairs, the balanced K warps
# by default where a stage takes at most 2 K steps) and .carry/s28e-moe.tar.xz (main's bin/moe).
#  1. main against the candidate, two rounds, four shapes, fp8 and bf16, M = 1..256;
#  2. gpu-check of the candidate (its tests, cases, switched cases, fixtures, benchmarks, decode).
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29f-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s28e-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
for round in 1 2; do
  for v in main new; do
    b=/tmp/n/bin/moe && [ $v = main ] && b=/tmp/m/bin/moe
    op_rows "round=$round $v" $b --shapes deepseek-v3-tp8,qwen3-30b-a3b,qwen3-235b-a22b-tp8,qwen3-next-80b-a3b \
      --formats fp8_block,bf16 --M 1,2,4,8,16,32,64,256
  done
done > $R/ab-landing.log
grep -E "qwen3-235b.*fp8_block +(8|16) |deepseek-v3-tp8 +fp8_block +(1|16) " $R/ab-landing.log | cut -c1-90
echo "a/b t=$(el)"
pack
quick_gpu_check /tmp/n/bin 5
pack
echo "done t=$(el)"
