#!/usr/bin/env bash
# Session 29, fifth call: where the remaining time goes, for session 30 (carry .carry/s29f-gpu.tar.xz; main's
# kernels at M=1).
#  1. every kernel of DeepSeek-V3's full layer at M=1 (fp8; 1.26x its floor, target 1.15x), ncu's durations
#     and DRAM throughput in one pass;
#  2. the stalls of Qwen3-30B-A3B fp8 M=1's swap-AB stage 1 and stage 2 (ncu had stage 2 at 32 % of DRAM peak).
set -uo pipefail
export END=${END:-300}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29f-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout "$(cap 120 150)" "$NCU" --clock-control none --launch-skip 60 --launch-count 12 \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size \
  /tmp/n/bin/moe bench --shapes deepseek-v3 --formats fp8_block --M 1 --copies 2 > $R/dsv3-m1-kernels.log 2>&1
grep -E "^  [a-z_ ]|gpu__time|dram__|grid_size" $R/dsv3-m1-kernels.log | sed -E 's/\(RouteArgs.*|\(moe::.*//' | head -60
pack
mkdir -p $R/st
for skip in 8 9; do
  MOE_BIN=/tmp/n/bin NCU_SKIP=$skip OUT=$R/st/swap-m1-skip$skip \
    BENCH_ARGS="bench --shapes qwen3-30b-a3b --formats fp8_block --M 1" \
    timeout "$(cap 60 20)" scripts/profile-stalls swap_ab_kernel 2>&1 | tail -1
  grep -E "swap_ab_kernel|Duration|DRAM Throughput" $R/st/swap-m1-skip$skip/stalls-swap_ab_kernel-details.txt | head -4
  python3 scripts/stall-summary $R/st/swap-m1-skip$skip/stalls-swap_ab_kernel-sass.csv 14 | head -18
done
rm -f $R/st/*/*.ncu-rep
pack
echo "done t=$(el)"
