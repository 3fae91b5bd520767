#!/usr/bin/env bash
# Session 41's first plan (carry .carry/s41a.tar.xz, built from main at the commit that adds this plan; its
# MOE_KERNEL_TIMELINE measuring build as bin/moe-measuring). Meant for whatever card the call
# gets, first for the H200 column: the quick gpu-check (every GPU test with poisoned memory, the case checks,
# the fixtures, Auto's tables, DeepSeek-V3, the decode step, the torch peer), session 40's three new defaults
# off against on on this card (the swapped h quantisation, y in bf16 from 0 tokens, the prefetch during the
# grouping; one process, two rounds), Auto's paths at 8-48 tokens, the kernel timeline of the decode step at
# batch 64 (the align kernel and the swapped GEMM's stages now recorded too).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s41a.tar.xz || exit 1
quick_gpu_check $B 200
pack
clocks_start $R/clocks.log
bench_ab $R/quant-ab.log MOE_WGMMA_SWAP_QUANT_H 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256
bench_ab $R/ybf16-ab.log MOE_GROUPED_Y_BF16_MIN_TOKENS 1024,0 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,256
bench_ab $R/prefetch-ab.log MOE_WGMMA_PREFETCH_STEPS 0,8 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,128,256
clocks_stop
pack
path_thresholds $B/moe qwen3-30b-a3b fp8_block 8,16,24,32,48 40
# The decode step at batch 64 (its MoE calls take 64 tokens: route, align, the two swapped GEMMs, the
# combine) through the kernel timeline (the measuring build's MOE_KERNEL_TIMELINE): each launch's first
# start, waits, marks and last end, the median over the layers: where the call's time above its floor goes.
env MOE_KERNEL_TIMELINE=1 timeout "$(cap 60 5)" $B/moe-measuring bench --random-shape qwen3-30b-a3b \
  --format fp8_block --batches 64 --prefill 0 > $R/timeline-b64.log 2>&1
echo "timeline batch 64 rc $?"
grep -A34 -iE "^  launch" $R/timeline-b64.log | head -40
pack
echo "done t=$(el)"
