#!/usr/bin/env bash
# Session 30, sixth call. Carry: .carry/s30r-gpu.tar.xz (branch next/s30-ring, NOT RUN ON A GPU: the
# one-column-tile swap-AB kernels (calls of up to 8 tokens a pass) take their weights through a ring of two
# shared-memory slots per warp, cp.async, waited for by group: two steps in flight a warp, where the register
# path had one (its `cur = ahead` copy waited for the loads before the next step's went out). On where its
# shared memory still lets two blocks share an SM (not DeepSeek's 7168-wide rows); MOE_SWAP_AB_RING=0: the
# register path, main's kernels.)
#  1. the op's GPU tests with the ring (poisoned workspaces, the M sweep, ten runs' bits, batch invariance);
#  2. ring against registers in one binary, two rounds: Qwen3-30B-A3B fp8 / bf16 M = 1..16, DeepSeek-V3 TP8
#     and Qwen3-235B-A22B TP8 fp8 M = 1, 8; the decode step (batches 1 and 8) alternated three times;
#  3. gpu-check with the ring.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30r-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
timeout "$(cap 120 300)" /tmp/n/bin/cuda_fused_moe_test > $R/tests-ring.log 2>&1
echo "tests rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED) " $R/tests-ring.log | head -8
for round in 1 2; do
  for ring in 0 1; do
    MOE_SWAP_AB_RING=$ring op_rows "round=$round ring=$ring" /tmp/n/bin/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4,8,16
    MOE_SWAP_AB_RING=$ring op_rows "round=$round ring=$ring" /tmp/n/bin/moe --shapes deepseek-v3-tp8,qwen3-235b-a22b-tp8 --formats fp8_block --M 1,8
  done
done > $R/ab-ring.log
awk '$6 == 1 || $6 == 8 {print $1, $2, $3, $4, $6, $7}' $R/ab-ring.log | sort -k3,3 -k4,4 -k5,5n -k2,2 | column -t
for _ in 1 2 3; do
  for ring in 1 0; do
    MOE_SWAP_AB_RING=$ring timeout 40 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/ring=$ring /"
  done
done | tee $R/decode-ring.log
echo "a/b t=$(el)"
pack
quick_gpu_check /tmp/n/bin 5
pack
echo "done t=$(el)"
