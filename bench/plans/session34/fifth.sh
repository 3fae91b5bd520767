#!/usr/bin/env bash
# Session 34's fifth plan (not run: the device time ran out; for session 35). Carry: a pack of main's build
# (scripts/pack-gpu-carry build, renamed .carry/s34e-gpu.tar.xz) with, if there is room, the
# MOE_SWAP_AB_TIMELINE measuring build as bin/moe-measuring. The queue-latency probe (H100): L2 hits take
# ~270 ns with 28 KB in flight per SM and ~950 ns with 56 KB, for 2976 against 3051 GB/s, and the wait is the
# card's (idle SMs see it too). The swap-AB decode stages keep up to 64 KB per SM in flight; with one block
# slot per SM (MOE_SWAP_AB_SLOTS_PER_SM=1) they keep half, so their x, h, pair and combine round trips should
# shorten. The one-token timeline 0 / 1, then the A/B on the op and the decode step, two rounds each.
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s34e-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt && [ -x .carry/queue_latency_probe ]; then
  queue_probe .carry/queue_latency_probe
  pack
fi
if [ -x /tmp/n/bin/moe-measuring ]; then
  for v in 0 1; do
    MOE_SWAP_AB_SLOTS_PER_SM=$v MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 40 30)" /tmp/n/bin/moe-measuring bench \
      --shapes qwen3-30b-a3b --formats fp8_block --M 1 --paths auto > $R/swtl-slots$v.log 2>&1
    echo "timeline slots=$v rc $?"
    grep -E "^qwen3|stage" $R/swtl-slots$v.log | tail -12
  done
  pack
fi
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
  --M 1,2,8,16,48
pack
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M \
  --shapes qwen3-235b-a22b-tp8,deepseek-v3-tp8,qwen3-next-80b-a3b --formats fp8_block --M 1,8
pack
decode_ab $M $R/slots-decode.log MOE_SWAP_AB_SLOTS_PER_SM 0 1 0 1
pack
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
pivot_rows $R/slots.log
pack
echo "done t=$(el)"
