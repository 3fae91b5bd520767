#!/usr/bin/env bash
# Session 48's first call (carry .carry/s48a.tar.xz, main's build at f9f1621; .carry/s48-timeline.tar.xz, its
# MOE_KERNEL_TIMELINE build as bin/moe-timeline). Session 47's op timeline had 18-21 us of each grouped-GEMM
# call pass before the weights stream (Qwen3-30B-A3B fp8, 16-256 tokens): two launches (route, align) at
# 9-128 tokens, four at 256. Here: the one-block prologue past 8 tokens (MOE_SMALL_PROLOGUE_TOKENS, built in
# session 47, not run) checked and measured, the one-block grouping at 256 tokens (MOE_GROUPING_MIN_CHUNK
# 2048) in four rounds, and the op's launches with each. On an H200 the quick gpu-check goes first (the
# table's column for the card the targets are for: none since session 44); on an H100 last, if time is left.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s48a.tar.xz}" "${TIMELINE:-.carry/s48-timeline.tar.xz}" || exit 1
pack_every 15
h200=0
grep -q H200 $R/gpu.txt && h200=1
[ $h200 = 1 ] && quick_gpu_check $B 250
timeout "$(cap 60 150)" $B/cuda_forced_paths_test --gtest_color=no \
  --gtest_filter='SmallPrologueGpu.*' > $R/small-prologue-test.log 2>&1
echo "small prologue test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|DIFFER|changed" $R/small-prologue-test.log | head -8
for spec in qwen3-30b-a3b:fp8_block,bf16:9,12,16,24,32 qwen3-next-80b-a3b:fp8_block:16,32 \
  qwen3-235b-a22b-tp8:fp8_block:16,32 deepseek-v3-tp8:fp8_block:16; do
  IFS=: read -r shape formats ms <<< "$spec"
  timeout "$(cap 90 120)" $B/moe bench --shapes "$shape" --formats "$formats" --M "$ms" \
    --env-ab MOE_SMALL_PROLOGUE_TOKENS=8,32 --rounds 2 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" \
    >> $R/small-prologue-ab.log
  echo "ab $shape t=$(el)"
done
awk 'NF >= 12 { k = $1 " " $2 " M=" $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
                v[k] = v[k] " " $11 "/" $12 " " $4 }
     END { for (i = 1; i <= n; ++i) print order[i] ":" v[order[i]] }' $R/small-prologue-ab.log
pack
timeout "$(cap 60 80)" $B/moe bench --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 256 \
  --env-ab MOE_GROUPING_MIN_CHUNK=1024,2048 --rounds 4 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" \
  > $R/grouping-chunk-ab.log
awk 'NF >= 12 { k = $1 " " $2 " M=" $3 " " $11; s[k] += $4; n[k]++ }
     END { for (k in s) printf "%s: %.2f us (mean of %d)\n", k, s[k] / n[k], n[k] }' $R/grouping-chunk-ab.log | sort
if [ -x $B/moe-timeline ]; then
  for tokens in 8 32; do
    MOE_SMALL_PROLOGUE_TOKENS=$tokens MOE_KERNEL_TIMELINE=1 timeout "$(cap 25 40)" $B/moe-timeline bench \
      --shapes qwen3-30b-a3b --formats fp8_block --M 16,32 > $R/op-timeline-prologue$tokens.log 2>&1
    grep -E "^qwen|prologue|align|GEMM [12] +1|combine +[0-9]|layer \(" $R/op-timeline-prologue$tokens.log
  done
fi
pack
[ $h200 = 0 ] && quick_gpu_check $B 5
stop_packing
pack
echo "done t=$(el)"
