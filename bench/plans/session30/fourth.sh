#!/usr/bin/env bash
# Session 30, fourth call. Carry: .carry/s30l-moe.tar.xz (bin/moe and lib/ of branch next/s30-l2, NOT RUN ON
# A GPU: the one-block prologue's routing warp asks L2 for the first MOE_PROLOGUE_L2_KB of each routed
# expert's gate/up weights as soon as its token is routed (cp.async.bulk.prefetch.L2, 16 KB a lane), where
# stage 1 can ask for them only after its wait; until then (the grouping, the quantisation, stage 1's
# launch) DRAM idles. Off (0) by default; nothing else changed against main 8cca4bc.)
#  1. the op at 0, 512, 1536 and 3072 KB a routed expert, two rounds: Qwen3-30B-A3B fp8 / bf16 M = 1..8
#     (an expert's gate/up: 3 MB fp8), DeepSeek-V3 TP8 and Qwen3-235B-A22B TP8 fp8 M = 1, 8, DeepSeek-V3
#     full fp8 M=1 (29 MB an expert: the first KB of it);
#  2. the decode step (Qwen3-30B-A3B fp8, batches 1 and 8) at 0, 1536 and 3072, alternated three times.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30l-moe.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
for round in 1 2; do
  for kb in 0 512 1536 3072; do
    MOE_PROLOGUE_L2_KB=$kb op_rows "round=$round kb=$kb" /tmp/n/bin/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4,8
    MOE_PROLOGUE_L2_KB=$kb op_rows "round=$round kb=$kb" /tmp/n/bin/moe --shapes deepseek-v3-tp8,qwen3-235b-a22b-tp8 --formats fp8_block --M 1,8
    MOE_PROLOGUE_L2_KB=$kb op_rows "round=$round kb=$kb" /tmp/n/bin/moe --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
  done
done > $R/op-l2.log
echo "op t=$(el)"
awk '$4=="qwen3-30b-a3b" && $5=="fp8_block" {print $1, $2, $6, $7}' $R/op-l2.log | sort -k3,3n -k2,2 | head -40
grep -E "deepseek-v3 |tp8" $R/op-l2.log | awk '$6==1 {print $1,$2,$4,$6,$7}'
for _ in 1 2 3; do
  for kb in 0 1536 3072; do
    MOE_PROLOGUE_L2_KB=$kb timeout 40 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/kb=$kb /"
  done
done | tee $R/decode-l2.log
pack
echo "done t=$(el)"
