#!/usr/bin/env bash
# Session 34, fifth call (little device time left). Carry: .carry/s34e-gpu.tar.xz (bin/moe: main +
# MOE_SWAP_AB_SLOTS_PER_SM). The queue-latency probe (H100): L2 hits take ~270 ns with 28 KB in flight per SM
# and ~950 ns with 56 KB, for 2976 against 3051 GB/s, and the delay is the card's (idle SMs see it too). The
# swap-AB decode stages keep up to 64 KB per SM in flight; with one block slot per SM they keep half, so their
# x, h, pair and combine round trips should shorten. A/B on the op, two rounds.
set -uo pipefail
export END=${END:-100}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s34e-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,8
pack
env_ab_rows $R/slots.log MOE_SWAP_AB_SLOTS_PER_SM "0 1" $M --shapes qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block --M 1
pivot_rows $R/slots.log
pack
echo "done t=$(el)"
