#!/usr/bin/env bash
# Session 22, first call: the router prologue's 128-expert bits test (then on for the rest if it passes), the
# kernel timeline at main with the 16-warp compact GEMV (session 21's third call
# ran its timeline with MOE_GEMV_WIDE=0), gpu-check at main (H200 figures if an H200 comes: session 21's
# H200 figures predate the 16-warp blocks), then where TP 8 tp leaves TP 1's tokens (tp8_probe.py), then the TP CLI with the time left, without its checkpoints in
# the archive. Carry: .carry/s22-gpu.tar.xz (scripts/pack-gpu-carry build at main), .carry/measuring22.tar.xz
# (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE, packed with tar -cJ) and .carry/s22-branch.tar.xz
# (bin/moe, cuda_fused_moe_test, cuda_model_test of branch next/s22's build, stripped, tar -cJ).
set -uo pipefail
export END=585 # the call's 600 s, less the packing (gpu-env.sh's cap)
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s22-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring22.tar.xz
record_gpu $R/gpu.txt
# The fused router prologue is off by default until its 128-expert bits test (a cluster of 8 blocks) passes
# on a GPU: that test first; when it passes, the figures below are taken with it on.
timeout 180 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_router*:cuda_model_gemv*' > $R/router-test.log 2>&1
rc=$?
echo "router + gemv tests rc $rc t=$(el)"
grep -E -A3 "^\[  (FAILED|PASSED)|Failure" $R/router-test.log | head -12
[ $rc -eq 0 ] && export MOE_ROUTER_PROLOGUE=1 && echo "MOE_ROUTER_PROLOGUE=1 from here"
timeline /tmp/m/bin/moe $R/timeline-b1.log
pack
quick_gpu_check /tmp/n/bin
pack
# Branch next/s22 (.carry/s22-branch.tar.xz: its moe, cuda_fused_moe_test and cuda_model_test): warp 0
# groups up to 32 pairs in the one-block prologue (warp_align.cuh); the router kernel quantises x from its
# shared fp32 rows. Its fused MoE tests and the router / GEMV tests, then its decode step against main's.
mkdir -p /tmp/b && tar -C /tmp/b -xJf .carry/s22-branch.tar.xz
timeout "$(cap 120 220)" /tmp/b/bin/cuda_fused_moe_test > $R/branch-moe-test.log 2>&1
echo "branch cuda_fused_moe_test rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|\[grouping\] M=4" $R/branch-moe-test.log | head -8
timeout 120 /tmp/b/bin/cuda_model_test --gtest_filter='cuda_model_router*:cuda_model_gemv*' > $R/branch-router-test.log 2>&1
echo "branch router + gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)" $R/branch-router-test.log | head -6
binaries_ab $R/branch-ab.log /tmp/b/bin/moe /tmp/n/bin/moe 3
pack
# Where TP 8 tp leaves TP 1's tokens: each decode step's logits beside the CPU reference's (NEXT.md item 4).
timeout "$(cap 150 60)" python3 bench/plans/session22/tp8_probe.py /tmp/n/bin/moe $R/tp8-probe > $R/tp8-probe.log 2>&1
echo "tp8 probe rc $? t=$(el)"
grep -A18 "^step" $R/tp8-probe.log
rm -rf $R/tp8-probe
pack
tp_cli /tmp/n/bin/moe 300
pack
echo "done t=$(el)"
