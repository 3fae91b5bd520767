#!/usr/bin/env bash
# Session 22, first call: the kernel timeline at main with the 16-warp compact GEMV (session 21's third call
# ran its timeline with MOE_GEMV_WIDE=0), gpu-check at main (H200 figures if an H200 comes: session 21's
# H200 figures predate the 16-warp blocks), then the TP CLI with the time left, without its checkpoints in
# the archive. Carry: .carry/s22-gpu.tar.xz (scripts/pack-gpu-carry build) and .carry/measuring22.tar.xz
# (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE, packed with tar -cJ).
set -uo pipefail
export END=585 # the call's 600 s, less the packing (gpu-env.sh's cap)
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s22-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring22.tar.xz
record_gpu $R/gpu.txt
timeline /tmp/m/bin/moe $R/timeline-b1.log
pack
quick_gpu_check /tmp/n/bin
pack
timeout "$(cap 300 5)" python3 scripts/tp-gpu-check /tmp/n/bin/moe $R/tp > $R/tp.log 2>&1
echo "tp-gpu-check rc $? t=$(el)"
grep -E "TP [0-9]|FAIL" $R/tp.log | tail -14
rm -rf $R/tp # generated checkpoints: too large to bring back
pack
echo "done t=$(el)"
