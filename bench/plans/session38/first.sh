#!/usr/bin/env bash
# Session 38's first plan (written in session 37, which got no device call: 14 refused or failed starts took
# the 30 minutes). Branch next/s37-gate-up-box: fp8 stage 1's gate/up weight tile in one 5-D tensor-map copy a
# K step (MOE_WGMMA_GATE_UP_BOX, on by default there; main issues 16 copies a step in the swapped kernel, 8 in
# the 128-pair one). On an H200: the branch's quick gpu-check (its forced-path GPU test compares the one-box
# rows' bits with the per-box rows'); the switch off against on in the same binary (off is main's kernel);
# the swapped kernel's cycle accounting with the switch off and on (does the copier's issuing time a stage-1
# step fall from ~16 copies' worth?); Auto's paths forced against each other (8-128 tokens); the swapped
# kernel's stages under ncu; the swap-AB timeline; the one-token stalls. Carry: .carry/s38-box.tar.xz
# (scripts/pack-gpu-carry of the branch plus bin/moe-measuring, the branch's
# scripts/build-measuring "MOE_SWAP_AB_TIMELINE;MOE_WGMMA_CYCLES").
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s38-box.tar.xz || exit 1
quick_gpu_check $B "${GC_RESERVE:-300}"
grep -E "gate/up in one box" $R/gc/gpu-tests.log | head -8
pack
# The switch off against on, two rounds alternated: the fp8 sizes where Auto takes the swapped kernel (64-256)
# and the 128-pair kernel (1024, 4096); bf16 is untouched (cp.async weights).
env_ab_rows $R/box-ab.log MOE_WGMMA_GATE_UP_BOX "0 1" $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,128,256,1024,4096
pivot_rows $R/box-ab.log
pack
wgmma_cycles $B/moe-measuring MOE_WGMMA_GATE_UP_BOX "0 1" 64,256,4096
# Auto's path thresholds were all measured on H100s; on the H200 fp8 runs at 1.5-1.9x its floor from 16 to
# 256 tokens where bf16 runs at 1.16-1.27x. Both paths forced, each M. Then the swapped grouped GEMM's stages
# alone under ncu (fp8's stage-1 copies against bf16's) and the swap-AB stages' timeline.
path_thresholds $B/moe qwen3-30b-a3b fp8_block,bf16 8,16,24,32,48,64,128 150
swap_gemm_ncu $B/moe 60
swap_ab_timeline $B/moe-measuring 16 48
one_token_stalls $B/moe 10 "21 none" "21 all" "20 none"
pack
echo "done t=$(el)"
