#!/usr/bin/env bash
# Session 47's first call (carry .carry/s46b.tar.xz, main's build at 110212d; .carry/s46-timeline.tar.xz, its
# MOE_KERNEL_TIMELINE measuring build as bin/moe-timeline). First the quick gpu-check of session 46's last
# CUDA-side change (48097f6, Auto's Qwen3-Next bf16 threshold at 16 tokens: the GPU tests' Qwen3-Next bf16
# rows at 16 and 31 tokens now on the grouped GEMM), then Auto against both forced paths there; then the
# grouped GEMM's per-call timeline (moe bench on the op with MOE_KERNEL_TIMELINE=1: each stage's blocks'
# start and end spreads, stage 2's idle share at its end) with the tail rule off and on, where it wins
# (Qwen3-235B-A22B TP8 and Qwen3-30B-A3B fp8 at 192 and 384 tokens) and where taking won without a tail
# (Qwen3-235B-A22B TP8 at 256: NEXT.md item 3), with runs taken at every K step as a third setting there.
set -uo pipefail
export END=${END:-500}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46b.tar.xz}" "${TIMELINE:-.carry/s46-timeline.tar.xz}" || exit 1
pack_every 15
quick_gpu_check $B 200
PT_PATHS=mma,swap-ab path_thresholds $B/moe qwen3-next-80b-a3b bf16 8,12,16,24,32 150
if [ -x $B/moe-timeline ]; then
  for shape in qwen3-235b-a22b-tp8 qwen3-30b-a3b; do
    MOE_KERNEL_TIMELINE=1 timeout "$(cap 60 10)" $B/moe-timeline bench --shapes $shape --formats fp8_block \
      --M 192,256,384 --env-ab MOE_WGMMA_TAKE_AT_TAIL=0,8 --rounds 1 > $R/timeline-$shape.log 2>&1
    echo "timeline $shape rc $?"
    grep -E "^[a-z0-9-]+ +fp8|GEMM|rror" $R/timeline-$shape.log
  done
  MOE_KERNEL_TIMELINE=1 MOE_WGMMA_TAKE_RUNS=1 timeout "$(cap 40 5)" $B/moe-timeline bench \
    --shapes qwen3-235b-a22b-tp8 --formats fp8_block --M 256 > $R/timeline-take-every-step.log 2>&1
  grep -E "^[a-z0-9-]+ +fp8|GEMM|rror" $R/timeline-take-every-step.log
fi
stop_packing
echo "done t=$(el)"
