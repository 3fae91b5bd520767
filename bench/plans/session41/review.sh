#!/usr/bin/env bash
# Session 41's first plan as run (the first ask for a machine failed; this one folds step 1 of NEXT.md into
# step 0): carry .carry/s41b.tar.xz, built from branch next/s41-review (main 510a9c9 plus session 40's review
# mends: one h_bits, store_swap_h_scales; different SASS), with its MOE_KERNEL_TIMELINE measuring build as
# bin/moe-measuring, and .carry/s41a-moe.tar.xz (main 6a487fa's moe: the same device code as 510a9c9) for
# the A/B. The review build's grouped forced paths first (the swapped kernel's quantised h against fp8_rows,
# every path and TP phase), then the quick gpu-check on it (every GPU test with poisoned memory, the case
# checks, fixtures, the headline benches, the torch peer: the table's column for the card that came), main
# against the review build at 64 and 256 tokens (two rounds alternated), the kernel timeline of the decode
# step at batch 64, and, with time left, session 40's prefetch off against on and Auto's paths at 8-48 tokens.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s41b.tar.xz || exit 1
mkdir -p /tmp/main-carry && tar -C /tmp/main-carry -xJf .carry/s41a-moe.tar.xz bin/moe || exit 1
MAIN=/tmp/main-carry/bin/moe
grouped_forced_paths 60 440
quick_gpu_check $B 120
pack
ab_op_rows $MAIN $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 64,256 > $R/review-ab.log
pivot_rows $R/review-ab.log
pack
env MOE_KERNEL_TIMELINE=1 timeout "$(cap 45 5)" $B/moe-measuring bench --random-shape qwen3-30b-a3b \
  --format fp8_block --batches 64 --prefill 0 > $R/timeline-b64.log 2>&1
echo "timeline batch 64 rc $? t=$(el)"
grep -A34 -iE "^  launch" $R/timeline-b64.log | head -40
pack
bench_ab $R/prefetch-ab.log MOE_WGMMA_PREFETCH_STEPS 0,8 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,128,256
pack
path_thresholds $B/moe qwen3-30b-a3b fp8_block 8,16,24,32,48 5
echo "done t=$(el)"
