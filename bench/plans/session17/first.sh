#!/usr/bin/env bash
# The first GPU call after session 17 (a session without a GPU): one call, about 9 minutes, ends by END.
# 1. main's untimed commits against eb2257a, same lease: session 16's swapped-tile rule by shape (9e2ab51) and
#    wgmma_ring.cuh, and session 17's grouped-GEMM y in bf16 (MOE_GROUPED_Y_BF16=1 against =0, the same binary):
#    DeepSeek-V3 TP8, Qwen3-30B-A3B and Qwen3-235B-A22B TP8 fp8 at M=128..4096. Keep y in bf16 on by default
#    if it is faster (it should be at M=1024 and 4096: half of y's bytes, 268-940 MB at 4096) and the
#    forced-path test's "y in bf16" rows pass; revert 9e2ab51 if DeepSeek TP8 M=256..768 does not drop.
# 2. gpu-check of main: every GPU test with poisoned workspaces, the CUDA cases, fixtures, benches, peer, model.
# 3. The grouped GEMM at M=4096 under ncu (tensor pipe, L2, stalls): why it runs at ~25 % of the fp8 peak.
# (The decode step's GEMVs under ncu, session16/gemv-ncu.sh, are the second call's.)
# Carry: .carry/tr-gpu.tar.xz (main, scripts/pack-gpu-carry), .carry/m16f-gpu.tar.xz (eb2257a), .carry/first17.sh
# Run:   END=560 bash .carry/first17.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-560}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R /tmp/n /tmp/o
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures --exclude='*.ncu-rep' r 2>/dev/null; }
tar -C /tmp/n -xJf .carry/tr-gpu.tar.xz && tar -C /tmp/o -xJf .carry/m16f-gpu.tar.xz bin/moe
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
echo "unpacked t=$(el)"

# 1. The tile rule, old (eb2257a) against new (main), and main with the grouped GEMM's y in bf16
#    (MOE_GROUPED_Y_BF16=1, session 17, untimed), alternated.
SH=deepseek-v3-tp8,qwen3-30b-a3b,qwen3-235b-a22b-tp8
for run in o1 n1 y1 n2 y2; do
  b=$([ ${run:0:1} = o ] && echo o || echo n)
  env $([ ${run:0:1} = y ] && echo MOE_GROUPED_Y_BF16=1 || echo MOE_GROUPED_Y_BF16=0) timeout 50 /tmp/$b/bin/moe bench \
    --shapes $SH --formats fp8_block --M 128,256,512,1024,4096 --paths auto 2>&1 | grep -E "^(deepseek|qwen)" | sed "s/^/$run /"
  echo "$run t=$(el)" >&2
done > $R/ab.log
echo "a/b t=$(el)"
awk '{k=$2" "$4; v[k]=v[k]" "$1"="$5} END{for(k in v) print k, v[k]}' $R/ab.log | sort -k1,1 -k2,2n
pack

# 2. gpu-check of main, whole (about 150 s on an H200).
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 260 100) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED|differ|not the first" $R/gc/gpu-tests.log | head -20
sed -n '/== summary/,$p' $R/gc/gc.log | head -24
pack

# 3. Where the grouped GEMM's time goes at M=4096 (fp8, Qwen3-30B-A3B; stage 1 ran at ~21 % of the fp8
#    peak in session 11's ncu): tensor pipe, L2 and DRAM throughput, stall reasons per SASS line.
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p $R/ncu
timeout $(cap 150 20) $NCU --clock-control none -k regex:expert_wgmma_kernel --launch-skip 2 --launch-count 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
  --section SourceCounters --import-source no -f -o $R/ncu/gemm \
  /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 --paths auto > $R/ncu/run.log 2>&1
echo "ncu rc $? t=$(el)"; tail -3 $R/ncu/run.log
$NCU --import $R/ncu/gemm.ncu-rep --page details > $R/ncu/details.txt 2>&1
grep -E "expert_wgmma|Throughput|Pipe|Tensor|Issued|Eligible|Active Warps|Duration|L2 Hit|Bandwidth|No Eligible|Busy" \
  $R/ncu/details.txt | head -60
$NCU --import $R/ncu/gemm.ncu-rep --page source --csv --print-source sass > $R/ncu/gemm-sass.csv 2>/dev/null
python3 scripts/stall-summary $R/ncu/gemm-sass.csv 25 > $R/ncu/stalls.txt 2>&1; head -50 $R/ncu/stalls.txt
xz -6 $R/ncu/gemm-sass.csv
echo "done t=$(el)"; pack
