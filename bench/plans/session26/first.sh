#!/usr/bin/env bash
# Session 26, first call: the full gpu-check of main with its benchmarks (owed since session 23: every kernel
# change since then ran on H100s only; main's kernels are 9e0d993's, 044c06d changed scripts), then, with the
# time left, ncu of the swapped wgmma stage at M=256 and of DeepSeek-V3's routed stage 1 at M=1 (past the
# shared expert's launches), and every kernel's duration in a few M=4096 calls. Carry: .carry/main-9e0d993-gpu.tar.xz (scripts/pack-gpu-carry build at 9e0d993).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/main-9e0d993-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin
pack
profile() {  # TAG KERNEL_REGEX LAUNCH_SKIP MOE_ARGS...
  local tag=$1 k=$2 skip=$3
  shift 3
  [ "$(cap 60 5)" -lt 60 ] && { echo "$tag skipped (time) t=$(el)"; return; }
  NCU_SKIP=$skip BENCH_ARGS="$*" OUT=$R/$tag timeout "$(cap 120 5)" scripts/profile-stalls "$k" /tmp/n/bin/moe \
    > $R/"$tag".log 2>&1
  echo "$tag rc $? t=$(el)"
  local csv
  csv=$(ls $R/"$tag"/stalls-*-sass.csv 2>/dev/null | head -1)
  [ -n "$csv" ] && python3 scripts/stall-summary "$csv" 8 | head -12
  grep -E "DRAM Throughput|Memory Throughput|Duration|Compute \(SM\) Throughput" \
    $R/"$tag"/stalls-*-details.txt 2>/dev/null | head -6
  rm -f $R/"$tag"/*.ncu-rep
  pack
}
# Every kernel of a few MoE calls at M=4096 (Qwen3-30B-A3B fp8): each one's duration and DRAM share under ncu,
# so the large-M work goes where the time is.
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "$(cap 90 5)" -ge 90 ]; then
  timeout "$(cap 150 5)" "$NCU" --clock-control none --launch-skip 60 --launch-count 24 --csv --metrics \
    gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active \
    /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 > $R/ncu-m4096.csv 2> $R/ncu-m4096.err
  echo "ncu m4096 rc $? t=$(el)"
  grep -E '^"[0-9]' $R/ncu-m4096.csv | awk -F'","' '{print $5, $(NF-2), $NF}' | cut -c1-160 | head -60
  pack
fi
profile qwen-m256-fp8 expert_wgmma_swap 8 bench --shapes qwen3-30b-a3b --formats fp8_block --M 256
profile dsv3-m1-fp8-skip8 swap_ab_kernel 8 bench --shapes deepseek-v3 --formats fp8_block --M 1
profile dsv3-m1-fp8-skip9 swap_ab_kernel 9 bench --shapes deepseek-v3 --formats fp8_block --M 1
echo "done t=$(el)"
