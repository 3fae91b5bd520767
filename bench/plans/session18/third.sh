#!/usr/bin/env bash
# The third GPU call after sessions 17 and 18: where the time goes. Ends by END (about 6.5 minutes).
# 1. ncu of the grouped GEMM at M=4096 (Qwen3-30B-A3B fp8, ~26 % of the fp8 peak; bf16 reaches ~44 % of its own
#    with the same bytes per K step): tensor pipe, L2 and DRAM throughput, scheduler and warp states, stalls per
#    SASS line.
# 2. A decode layer's kernel timeline (measuring build, MOE_KERNEL_TIMELINE; session 11's method) with the
#    register GEMV and with the compact one (MOE_GEMV_COMPACT=1): the q/k/v and o GEMVs' time after their
#    programmatic wait is the number to compare (session 11: 7.7 and 8.2 us with their weights loaded).
# 3. If time is left: ncu of the decode step's fp8 GEMVs, both kernels (no_instruction is the instruction-fetch
#    hypothesis).
# Carry: .carry/s18-gpu.tar.xz (main), .carry/measuring-kt.tar.xz (scripts/build-measuring MOE_KERNEL_TIMELINE,
#        bin/moe), .carry/third18.sh.   Run: END=380 bash .carry/third18.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-380}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r3; mkdir -p $R /tmp/n /tmp/m
pack() { tar -C /tmp -czf $OUT/r3.tgz --exclude='*.ncu-rep' r3 2>/dev/null; }
tar -C /tmp/n -xJf .carry/s18-gpu.tar.xz && tar -C /tmp/m -xJf .carry/measuring-kt.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt

# 1. The grouped GEMM at M=4096.
timeout $(cap 150 160) $NCU --clock-control none -k regex:expert_wgmma_kernel --launch-skip 2 --launch-count 2 \
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
pack

# 2. Timelines.
for c in 0 1; do
  MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=$c timeout $(cap 70 20) /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 > $R/timeline-compact$c.log 2>&1
  echo "timeline compact=$c rc $? t=$(el)"; grep -A14 -i "launch" $R/timeline-compact$c.log | head -16
done
pack

# 3. The GEMVs under ncu: the 16-token prefill runs GEMMs (the GEMV takes at most 4 rows), so the first 4
#    matching launches are the first decode step's (2 layers x q/k/v and o): skip them, profile the second's.
for c in 0 1; do
  [ $(cap 999) -gt 40 ] || break
  MOE_GEMV_COMPACT=$c timeout $(cap 80) $NCU --set full --import-source yes -k 'regex:gemv_(compact_)?kernel' \
    --launch-skip 4 --launch-count 4 -o $R/gemv$c /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --layers 2 --batches 1 --prefill 16 --reps 3 > $R/gemv$c-run.log 2>&1
  echo "ncu gemv compact=$c rc $? t=$(el)"
  $NCU --import $R/gemv$c.ncu-rep --page details --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section LaunchStats > $R/gemv$c-details.txt 2>&1
  grep -E "gemv_|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|No Instruction" \
    $R/gemv$c-details.txt | head -30
  $NCU --import $R/gemv$c.ncu-rep --page source --csv --print-source sass > $R/gemv$c-sass.csv 2>/dev/null
  python3 scripts/stall-summary $R/gemv$c-sass.csv 20 > $R/gemv$c-stalls.txt 2>&1; head -30 $R/gemv$c-stalls.txt
  xz -6 $R/gemv$c-sass.csv
  pack
done
echo "done t=$(el)"; pack
