#!/usr/bin/env bash
# Session 47: stage 1 taking its runs (MOE_WGMMA_STAGE1_TAKE: 0 never, 1 where its runs are unequal, the new
# default, 2 always). The first call's timeline had Qwen3-235B-A22B TP8 fp8's stage-1 blocks ending 38 to 86
# us after its start at 256 tokens: a tile's two runs there are two column blocks and one (I = 192), and
# with 132 blocks a fixed share gives the even blocks only the first kind. Carry .carry/s47b.tar.xz (main's
# build with the change) and .carry/s47-timeline.tar.xz (its MOE_KERNEL_TIMELINE build as bin/moe-timeline).
# First the new GPU test (the bits), then the A/B, the quick gpu-check, the timeline.
set -uo pipefail
export END=${END:-380}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s47b.tar.xz}" "${TIMELINE:-.carry/s47-timeline.tar.xz}" || exit 1
pack_every 15
timeout "$(cap 60 300)" $B/cuda_forced_paths_test --gtest_color=no \
  --gtest_filter='Stage1TakeGpu.*:TakeAtTailGpu.*' > $R/stage1-take-test.log 2>&1
echo "stage 1 take test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|stage 1 take|take at tail" $R/stage1-take-test.log | head -16
for spec in qwen3-235b-a22b-tp8:fp8_block:128,192,256,384 qwen3-30b-a3b:fp8_block:256,384; do
  IFS=: read -r shape formats ms <<< "$spec"
  timeout "$(cap 100 200)" $B/moe bench --shapes "$shape" --formats "$formats" --M "$ms" \
    --env-ab MOE_WGMMA_STAGE1_TAKE=0,1,2 --rounds 2 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" \
    >> $R/stage1-take-ab.log
  echo "ab $shape t=$(el)"
done
awk 'NF >= 12 { k = $1 " " $2 " M=" $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
                v[k] = v[k] " " $11 "/" $12 " " $4 }
     END { for (i = 1; i <= n; ++i) print order[i] ":" v[order[i]] }' $R/stage1-take-ab.log
pack
quick_gpu_check $B 30
if [ -x $B/moe-timeline ]; then
  MOE_KERNEL_TIMELINE=1 timeout "$(cap 40 5)" $B/moe-timeline bench --shapes qwen3-235b-a22b-tp8 \
    --formats fp8_block --M 256,384 --env-ab MOE_WGMMA_STAGE1_TAKE=0,1 --rounds 1 > $R/timeline-stage1-take.log 2>&1
  echo "timeline rc $?"
  grep -E "^[a-z0-9-]+ +fp8|GEMM|rror" $R/timeline-stage1-take.log
fi
stop_packing
pack
echo "done t=$(el)"
