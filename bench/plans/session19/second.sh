#!/usr/bin/env bash
# Session 19, second call: where the compact GEMV's cudaErrorIllegalInstruction in the measuring build
# (MOE_KERNEL_TIMELINE compiled in) comes from: the binary with the switch on and the timeline off at run time,
# then compute-sanitizer memcheck with both on (it names the faulting kernel and its PC).
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
R=/tmp/r2; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r2.tgz r2 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s19-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring19.tar.xz
record_gpu $R/gpu.txt
MOE_GEMV_COMPACT=1 timeout 40 /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --layers 2 \
  --batches 1 --prefill 0 > $R/measuring-compact1-notimeline.log 2>&1
echo "measuring, compact=1, timeline off: rc $? t=$(el)"; tail -2 $R/measuring-compact1-notimeline.log
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=1 timeout 120 $CS --tool memcheck --print-limit 10 /tmp/m/bin/moe bench \
  --random-shape qwen3-30b-a3b --format fp8_block --layers 2 --batches 1 --prefill 0 --reps 1 > $R/memcheck.log 2>&1
echo "memcheck rc $? t=$(el)"; grep -B2 -A12 -m2 -E "Illegal|illegal|Invalid" $R/memcheck.log | head -40
grep -E "ERROR SUMMARY" $R/memcheck.log
pack
echo "done t=$(el)"
