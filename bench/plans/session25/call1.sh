#!/usr/bin/env bash
# Session 25 (this session; run as call1.sh), first call. Branch next/s26 (b831e95): main's kernels by default plus the grouped GEMM's fp8 K
# steps as two m64n64 halves (MOE_WGMMA_HALVES=1, off; NOT RUN ON A GPU before this call). First its
# same-bits rows and an A/B at M = 1024 and 4096, then the full gpu-check with its benchmarks at the branch's
# defaults, which are main's kernels (owed since session 23: every kernel change since then ran on H100s
# only), then, with the time left, every kernel's duration in a few M=4096 calls (ncu) and ncu of the
# swapped wgmma stage at M=256 and of DeepSeek-V3's stage 1 at M=1 (launch 8 and 9: the shared expert's and
# the routed experts'). Carry: .carry/s26-gpu.tar.xz (scripts/pack-gpu-carry build at b831e95).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s26-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
timeout 120 /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/halves-tests.log 2>&1
echo "grouped GEMM rows (halves) rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|halves.*M=400 " $R/halves-tests.log | head -12
pack
for h in 0 1 0 1; do
  MOE_WGMMA_HALVES=$h timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
    --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/halves=$h /"
done > $R/halves-ab.log
cat $R/halves-ab.log
echo "t=$(el)"
pack
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
