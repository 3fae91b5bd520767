#!/usr/bin/env bash
# Session 39's first plan (written in session 38). Branch next/s38-swap-ahead (80a120d): main's gate/up box
# in the swapped kernel (measured in session 38: fp8 M=64 219.7 -> 175.9 us on the H200) plus
# MOE_WGMMA_SWAP_AHEAD (off by default, never run): the swapped kernel's consumers load an item's output pair
# ids and the next item's tile at the item's start instead of after its last K step (session 38's cycles:
# stage 2's set-up and epilogue 44 % of its consumers' step at 256 tokens). Here: the branch's quick
# gpu-check (the H200 column at main's kernels plus the new forced-path row), the switch off against on, the
# swapped kernel's cycles with it off and on; ncu's time of each kernel of the call at 64 and 256 tokens
# (where the 45-70 us above the floor go: the cycles had stage 1's steps near the floor's pace). Carry: .carry/s39.tar.xz (the branch's binaries and its
# MOE_SWAP_AB_TIMELINE;MOE_WGMMA_CYCLES measuring build as bin/moe-measuring).
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s39.tar.xz || exit 1
quick_gpu_check $B "${GC_RESERVE:-200}"
grep -E "pair ids ahead fp8_block\] M=400 " $R/gc/gpu-tests.log | head -2
pack
env_ab_rows $R/ahead-ab.log MOE_WGMMA_SWAP_AHEAD "0 1" $B/moe --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 \
  --formats fp8_block,bf16 --M 64,128,256
pivot_rows $R/ahead-ab.log
pack
call_kernels_ncu $B/moe 64 256
wgmma_cycles $B/moe-measuring MOE_WGMMA_SWAP_AHEAD "0 1" 64,256
pack
echo "done t=$(el)"
