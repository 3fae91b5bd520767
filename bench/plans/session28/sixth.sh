#!/usr/bin/env bash
# Session 28, sixth call (carry .carry/s28d-gpu.tar.xz): the fifth call found DeepSeek-V3 fp8 M=1's one-block
# prologue (routing, x quantised, grouping) taking 45 us under ncu, a quarter of the call (180 us against a
# 124.5 floor; the routed stages 87 + 50 us). DeepSeek-V3 TP8 has the same routing and H, so its M=1 call
# (60.5 us against 15.5) shows it on a small bench: every kernel's time (one ncu pass of two metrics), then
# where the prologue's warps stall; Qwen3-30B-A3B M=1's kernels beside it.
set -uo pipefail
export END=${END:-300}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28d-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for shape in deepseek-v3-tp8 qwen3-30b-a3b; do
  timeout 60 "$NCU" --clock-control none -k 'regex:swap_ab|prologue|combine|route' --launch-skip 24 --launch-count 8 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    /tmp/n/bin/moe bench --shapes $shape --formats fp8_block --M 1 --copies 2 > "$R/m1-kernels-$shape.log" 2>&1
  echo "$shape m1 kernels rc $? t=$(el)"
  grep -E "^  [a-z].*\(|gpu__time" "$R/m1-kernels-$shape.log" | sed 's/(unnamed>::SwapAbArgs)//' | cut -c1-110 | head -10
done
pack
mkdir -p $R/st
MOE_BIN=/tmp/n/bin NCU_SKIP=8 OUT=$R/st/prologue-dsv3tp8-m1 \
  BENCH_ARGS="bench --shapes deepseek-v3-tp8 --formats fp8_block --M 1 --copies 2" \
  timeout "$(cap 90 5)" scripts/profile-stalls prologue_small 2>&1 | tail -1
rm -f $R/st/*/*.ncu-rep
grep -E "^  [a-z].*\(|Duration|Executed Ipc|Stall (Long|Wait|Barrier|Short|Not Sel|No Inst|Branch|IMC)" $R/st/*/*details.txt | cut -c1-150 | head -14
pack
echo "done t=$(el)"
