#!/usr/bin/env bash
# The decode step's fp8 GEMVs under ncu (NEXT.md step 2): q/k/v (gemv_kernel<1, 4, 0>) and o take ~10 us for
# 8-10 MB (about 1 TB/s) although they load their weights before the programmatic wait. One launch of each
# from a decode step of a random 2-layer Qwen3-30B-A3B-shaped model: speed of light, warp states, occupancy,
# launch statistics, then the SASS lines with the most stall samples. ncu runs each kernel alone (no overlap
# with its predecessor), so read where the time after the weights goes, not the total.
# Carry: a pack of main (scripts/pack-gpu-carry) as .carry/gpu.tar.xz, and this script.
set -uo pipefail
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/m/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
R=$OUT/gemv-ncu; mkdir -p $R
# The prefill of 16 tokens takes the GEMMs (the GEMV serves at most 4 rows): skip the first decode step (2 layers x q/k/v and o),
# profile the second.
timeout 300 $NCU --set full --import-source yes -k 'regex:gemv_kernel' --launch-skip 4 --launch-count 4 \
  -o $R/gemv /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --layers 2 --batches 1 \
  --prefill 16 --reps 3 > $R/ncu.log 2>&1
echo "ncu rc $?"; tail -3 $R/ncu.log
$NCU --import $R/gemv.ncu-rep --page details --section SpeedOfLight --section WarpStateStats \
  --section Occupancy --section LaunchStats > $R/details.txt 2>&1
grep -E "gemv_kernel|Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Warp Cycles Per Issued" $R/details.txt | head -60
$NCU --import $R/gemv.ncu-rep --page source --print-source sass --csv > $R/source.csv 2>/dev/null
python3 - $R/source.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next((r for r in rows if any("Stall Sampling" in c for c in r)), None)
if not head:
    sys.exit("no source page with stall samples")
i = rows.index(head)
col = next(j for j, c in enumerate(head) if "Stall Sampling (All" in c)
src = next(j for j, c in enumerate(head) if c.lower() in ("source", "sass"))
body = [r for r in rows[i + 1:] if len(r) > col and r[col].replace(",", "").isdigit()]
total = sum(int(r[col].replace(",", "")) for r in body) or 1
print("top SASS lines by stall samples (all launches):")
for r in sorted(body, key=lambda r: -int(r[col].replace(",", "")))[:30]:
    n = int(r[col].replace(",", ""))
    print(f"{100 * n / total:5.1f}%  {r[src][:100]}")
PY
tar -C $OUT -czf $OUT/gemv-ncu.tgz gemv-ncu && rm -rf $R
