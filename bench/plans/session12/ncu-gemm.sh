#!/usr/bin/env bash
# Where the grouped GEMM's time goes at M=4096 (fp8, Qwen3-30B-A3B): ncu's speed-of-light, memory, compute
# (tensor pipe), scheduler and warp-state sections and per-instruction stall samples for stage 1 and stage 2
# of the wgmma kernel. Carry: .carry/first12.tar.xz (main/moe, lib/) and this script.
set -uo pipefail
mkdir -p /tmp/c && { [ -d /tmp/c/lib ] || tar -C /tmp/c -xJf .carry/first12.tar.xz; }
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/c/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=/usr/local/cuda/bin/ncu; R=/tmp/ng; mkdir -p $R
timeout 240 $NCU --clock-control none -k regex:expert_wgmma_kernel --launch-skip 2 --launch-count 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
  --section SourceCounters --import-source no -f -o $R/gemm \
  /tmp/c/main/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 --paths auto > $R/ncu-run.log 2>&1
echo "ncu rc $?"; tail -3 $R/ncu-run.log
$NCU --import $R/gemm.ncu-rep --page details > $R/details.txt 2>&1; grep -cE "" $R/details.txt
grep -E "expert_wgmma|Throughput|Pipe|Tensor|Issued|Eligible|Active Warps|Duration|L2 Hit|Bandwidth|Stall|No Eligible|Busy" $R/details.txt | head -80
$NCU --import $R/gemm.ncu-rep --page source --csv --print-source sass > $R/gemm-sass.csv 2>/dev/null
python3 scripts/stall-summary $R/gemm-sass.csv 25 > $R/stalls.txt 2>&1; head -70 $R/stalls.txt
$NCU --import $R/gemm.ncu-rep --page raw --csv > $R/raw.csv 2>/dev/null
python3 - $R/raw.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[0]
want = [h for h in hdr if any(k in h for k in ("pipe_tensor", "lts__t_bytes.sum.per_second", "lts__t_sectors_srcunit_tex",
        "l1tex__m_xbar2l1tex_read_bytes", "dram__bytes_read.sum.per_second", "sm__throughput.avg.pct", "gpu__time_duration.sum"))]
for r in rows[2:]:
    print(r[hdr.index("Kernel Name")][:60] if "Kernel Name" in hdr else "")
    for h in want: print("   ", h, r[hdr.index(h)])
PY
xz -9 $R/gemm-sass.csv; rm -f $R/raw.csv $R/gemm.ncu-rep; tar -C /tmp -czf $OUT/ng.tgz ng
