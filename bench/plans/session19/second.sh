#!/usr/bin/env bash
# Session 19, second call: the compact GEMV in a fresh measuring build at main (MOE_KERNEL_TIMELINE; session
# 17's failed with cudaErrorIllegalInstruction when MOE_GEMV_COMPACT=1); then ncu of the grouped GEMM at
# M=4096 with its fp8 steps in halves (MOE_WGMMA_HALVES=1) against whole steps.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-400}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r2; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r2.tgz --exclude='*.ncu-rep' r2 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s19-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring19.tar.xz
record_gpu $R/gpu.txt
for c in 1 0 1; do
  MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=$c timeout $(cap 60 120) /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 > $R/timeline-compact$c.log 2>&1
  echo "timeline compact=$c rc $? t=$(el)"; grep -iE "error|illegal" $R/timeline-compact$c.log | head -3
  grep -A14 -i "launch" $R/timeline-compact$c.log | head -16
done
pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for h in 1 0; do
  [ $(cap 999) -gt 60 ] || break
  MOE_WGMMA_HALVES=$h timeout $(cap 100) $NCU --clock-control none -k regex:expert_wgmma_kernel --launch-skip 2 \
    --launch-count 2 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section ComputeWorkloadAnalysis -f -o $R/gemm-h$h \
    /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 --paths auto > $R/gemm-h$h-run.log 2>&1
  echo "ncu halves=$h rc $? t=$(el)"
  $NCU --import $R/gemm-h$h.ncu-rep --page details > $R/gemm-h$h-details.txt 2>&1
  grep -E "expert_wgmma|Duration|Tensor|Issued Warp|No Eligible|Compute \(SM\) Throughput|Memory Throughput" \
    $R/gemm-h$h-details.txt | head -24
  pack
done
echo "done t=$(el)"
