#!/usr/bin/env bash
# Session 30, fifth call. Carry: .carry/s30s-gpu.tar.xz (main's kernels, 8cca4bc). Whether the M=1 swap-AB
# stages move more DRAM bytes than their weights (ncu, each kernel alone, caches flushed between launches):
# bytes read from DRAM, L2 sectors read and the L2 hit rate beside the duration, Qwen3-30B-A3B fp8 and bf16
# and DeepSeek-V3 full fp8 at one token.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30s-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,sm__cycles_active.avg
for args in "qwen3-30b-a3b fp8_block" "qwen3-30b-a3b bf16" "deepseek-v3 fp8_block"; do
  set -- $args
  timeout 120 "$NCU" --clock-control none --launch-skip 200 --launch-count 12 --metrics "$metrics" \
    /tmp/n/bin/moe bench --shapes "$1" --formats "$2" --M 1 > "$R/ncu-$1-$2.log" 2>&1
  echo "== $1 $2 rc $? t=$(el)"
  grep -E "^  [a-z_:<> ]*(swap_ab|prologue|combine|route|align)|gpu__time|dram__bytes|dram__throughput|lts__t_sectors|hit_rate" \
    "$R/ncu-$1-$2.log" | sed 's/(anonymous namespace):://; s/ \+/ /g' | cut -c1-110 | head -60
done
pack
echo "done t=$(el)"
