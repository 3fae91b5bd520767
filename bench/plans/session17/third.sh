#!/usr/bin/env bash
# The third GPU call after session 17: where the grouped GEMM's time goes at M=4096 (Qwen3-30B-A3B fp8, ~26 % of
# the fp8 peak; bf16 reaches ~44 % of its own with the same bytes per K step): ncu's tensor pipe, L2 and DRAM
# throughput, scheduler and warp states, stalls per SASS line, for stage 1 and stage 2 of the wgmma kernel.
# Carry: .carry/tr-gpu.tar.xz (main), .carry/third17.sh.   Run: END=400 bash .carry/third17.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-400}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r3; mkdir -p $R /tmp/n
pack() { tar -C /tmp -czf $OUT/r3.tgz --exclude='*.ncu-rep' r3 2>/dev/null; }
tar -C /tmp/n -xJf .carry/tr-gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt

# 3. The grouped GEMM at M=4096.
timeout $(cap 150 10) $NCU --clock-control none -k regex:expert_wgmma_kernel --launch-skip 2 --launch-count 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
  --section SourceCounters --import-source no -f -o $R/gemm \
  /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 --paths auto > $R/gemm-run.log 2>&1
echo "ncu gemm rc $? t=$(el)"
$NCU --import $R/gemm.ncu-rep --page details > $R/gemm-details.txt 2>&1
grep -E "expert_wgmma|Throughput|Pipe|Tensor|Issued|Eligible|Duration|L2 Hit|Bandwidth|No Eligible|Busy" \
  $R/gemm-details.txt | head -50
$NCU --import $R/gemm.ncu-rep --page source --csv --print-source sass > $R/gemm-sass.csv 2>/dev/null
python3 scripts/stall-summary $R/gemm-sass.csv 25 > $R/gemm-stalls.txt 2>&1; head -40 $R/gemm-stalls.txt
xz -6 $R/gemm-sass.csv
echo "done t=$(el)"; pack
