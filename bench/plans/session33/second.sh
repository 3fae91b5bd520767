#!/usr/bin/env bash
# Session 33, second call. Carry: s33c-gpu.tar.xz (main with the shared warm's 16 MB where the joint wave is on, x staged beside the expert's reads in a
# one-token stage 1, MOE_SWAP_AB_ONE_TOKEN_X, on; L2 requests ahead per stage, MOE_SWAP_AB_L2_AHEAD_STAGES;
# l2_warm's row end once; bin/moe-measuring: the same with the swap-AB timeline). The first call's H100
# timeline (Qwen3-30B-A3B fp8 M=1): stage 1 waited 3.5 us, staged 7.2 (three round trips: the expert, the
# pairs, x's row), stage 2 waited 16.2, staged 18.5, its tile ended 22.2 (median), 24.2 (last); stage 2's
# second K steps are requested only after its wait. Quick gpu-check (the new same-bits tests), then one
# token's x early against the pair-order staging, L2 requests ahead in stage 2 alone, and the timeline with
# each; on an H200 also the first call's questions (path thresholds, ncu per kernel, L2 ahead in both).
set -uo pipefail
export END=${END:-450}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s33c-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
quick_gpu_check /tmp/n/bin 250
grep -E "^\[(one-token x|l2 ahead)\]" $R/gc/gpu-tests.log | head -20
pack
env_ab_rows $R/onetok.log MOE_SWAP_AB_ONE_TOKEN_X "0 1" $M --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8,qwen3-next-80b-a3b,deepseek-v3-tp8 \
  --formats fp8_block --M 1
env_ab_rows $R/onetok.log MOE_SWAP_AB_ONE_TOKEN_X "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
pivot_rows $R/onetok.log
env_ab_rows $R/warm.log MOE_SHARED_WARM_KB "8192 16384" $M --shapes deepseek-v3 --formats fp8_block --M 1,2,8 \
  --copies 3
pivot_rows $R/warm.log
decode_ab $M $R/onetok-decode.log MOE_SWAP_AB_ONE_TOKEN_X 0 1 0 1
pack
export MOE_SWAP_AB_L2_AHEAD_STAGES=2
env_ab_rows $R/ahead2.log MOE_SWAP_AB_L2_AHEAD "0 1 2" $M --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
  --M 1,2,8
env_ab_rows $R/ahead2.log MOE_SWAP_AB_L2_AHEAD "0 2" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
pivot_rows $R/ahead2.log
decode_ab $M $R/ahead2-decode.log MOE_SWAP_AB_L2_AHEAD 0 2 0 2
unset MOE_SWAP_AB_L2_AHEAD_STAGES
pack
for v in 0 1; do
  MOE_SWAP_AB_ONE_TOKEN_X=$v MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 30 20)" /tmp/n/bin/moe-measuring bench \
    --shapes qwen3-30b-a3b --formats fp8_block --M 1 --paths auto > $R/swtl-x$v.log 2>&1
  echo "timeline one_token_x=$v rc $?"
  grep -E "^  stage|^qwen" $R/swtl-x$v.log | tail -12
done
MOE_SWAP_AB_L2_AHEAD_STAGES=2 MOE_SWAP_AB_L2_AHEAD=2 MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 30 20)" \
  /tmp/n/bin/moe-measuring bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 --paths auto > $R/swtl-a2.log 2>&1
echo "timeline l2 ahead 2 in stage 2 rc $?"
grep -E "^  stage|^qwen" $R/swtl-a2.log | tail -12
pack
if grep -q H200 $R/gpu.txt; then
  PT_SHAPES=qwen3-30b-a3b PT_FORMATS=fp8_block,bf16 PT_M=32,64,96,128,192,256,384 \
    timeout "$(cap 150 30)" scripts/path-thresholds $M > $R/paths.log 2>&1
  cat $R/paths.log
  pack
  env_ab_rows $R/ahead.log MOE_SWAP_AB_L2_AHEAD "0 1 2" $M --shapes deepseek-v3 --formats fp8_block --M 1 \
    --copies 3
  pivot_rows $R/ahead.log
  pack
  for s in qwen3-30b-a3b deepseek-v3; do
    OPK_COUNT=8 timeout "$(cap 40 10)" scripts/op-kernel-times $s fp8_block 1 $M > $R/kt-$s.log 2>&1
    tail -9 $R/kt-$s.log
  done
fi
pack
echo "done t=$(el)"
