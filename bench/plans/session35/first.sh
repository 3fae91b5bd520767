#!/usr/bin/env bash
# Session 35's first plan: session 34's fifth (the A/B of MOE_SWAP_AB_SLOTS_PER_SM 0 / 1: half the bytes in
# flight per SM), reordered so the op's one-token rows come first, plus the one-launch fused MoE
# (expert_fused.cu, --paths fused) by ring size: its producer keeps up to 6 slots of 32 KB in flight per SM
# (fp8, K = 2048), 7x the read bandwidth's knee (~28 KB per SM on the H100, session 34's probe), which would
# explain its fixed ~1.5-1.9 us per item (session 9): MOE_FUSED_AHEAD 0 / 1 / 2 / 3 (items of 32 KB in flight
# at most; 0: the ring's free slots), and MOE_FUSED_SMEM_KB 80 (a ring of 2 slots).
# Carry: .carry/s34e-gpu.tar.xz (bin/moe and bin/moe-measuring, the MOE_SWAP_AB_TIMELINE build) and
# .carry/queue_latency_probe.
set -uo pipefail
export END=${END:-430}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s34e-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt && [ -x .carry/queue_latency_probe ]; then
  queue_probe .carry/queue_latency_probe
  pack
fi
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes qwen3-30b-a3b --formats fp8_block --M 1,2,8
pivot_rows $R/slots.log
pack
env_ab_rows $R/fused.log MOE_FUSED_AHEAD "0 1 2 3" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
  --M 1,2,4 --paths fused
env_ab_rows $R/fused.log MOE_FUSED_SMEM_KB "80" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
  --M 1,2,4 --paths fused
pivot_rows $R/fused.log
for ahead in 0 1 2; do
  MOE_FUSED_AHEAD=$ahead MOE_FUSED_TIMELINE=1 timeout "$(cap 30 30)" $M bench --shapes qwen3-30b-a3b \
    --formats fp8_block --M 1 --paths fused > $R/fused-tl-ahead$ahead.log 2>&1
  echo "fused timeline ahead=$ahead rc $?"
  grep -vE "^ *[0-9]+ +[0-9]" $R/fused-tl-ahead$ahead.log | tail -14
done
pack
if [ -x /tmp/n/bin/moe-measuring ]; then
  for v in 0 1; do
    MOE_SWAP_AB_SLOTS_PER_SM=$v MOE_SWAP_AB_TIMELINE=1 timeout "$(cap 40 30)" /tmp/n/bin/moe-measuring bench \
      --shapes qwen3-30b-a3b --formats fp8_block --M 1 --paths auto > $R/swtl-slots$v.log 2>&1
    echo "timeline slots=$v rc $?"
    grep -E "^qwen3|stage" $R/swtl-slots$v.log | tail -12
  done
  pack
fi
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes qwen3-30b-a3b --formats bf16 --M 1,2,8,16,48
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes qwen3-30b-a3b --formats fp8_block --M 16,48
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
