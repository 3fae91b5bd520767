#!/usr/bin/env bash
# Session 47's second call, for an H200 (carry .carry/s47a.tar.xz, main's build at 122d10e). Auto's
# thresholds and the tail rule were set from H100 rows only (sessions 45-46); here both on the card the issue's
# targets are for: the tail rule off / on (0 / 8 %) where the H100 measured it 1.6-14 % faster and at the
# token counts between, then Auto against both forced paths around Qwen3-30B-A3B's and Qwen3-235B-A22B
# TP8's crossovers (8-64 tokens; session 38's H200 had the grouped GEMM 8 % ahead at 16 in fp8).
set -uo pipefail
export END=${END:-520}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s47a.tar.xz}" || exit 1
pack_every 15
nvidia-smi --query-gpu=name --format=csv,noheader
bench_ab $R/tail-ab.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8,qwen3-30b-a3b \
  --formats fp8_block --M 160,192,224,256,288,384,416
for shape in qwen3-30b-a3b:8,12,16,24,32,48,64 qwen3-235b-a22b-tp8:16,24,32,48,64,96; do
  PT_PATHS=mma,swap-ab PT_SHAPES=${shape%%:*} PT_FORMATS=fp8_block,bf16 PT_M=${shape#*:} \
    timeout "$(cap 180 5)" scripts/path-thresholds $B/moe > $R/path-thresholds-${shape%%:*}.log 2>&1
  echo "path thresholds ${shape%%:*} rc $? t=$(el)"
  grep -vE "^path-thresholds:" $R/path-thresholds-${shape%%:*}.log | tail -16
  pack
done
stop_packing
pack
echo "done t=$(el)"
