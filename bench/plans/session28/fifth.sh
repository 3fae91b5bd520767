#!/usr/bin/env bash
# Session 28, fifth call (main at 6799029's kernels; carry .carry/s28d-gpu.tar.xz): the reads the fourth call
# had no time for. Where the swapped wgmma kernel's warps stall at Qwen3-30B-A3B fp8 M=256 (stage 1 162.7 us
# at 75 % of DRAM peak against 126 us of weights; stage 2 85.7 us at 76 % against 63), and DeepSeek-V3 fp8
# M=1's swap-AB launches alone (ncu filtered to them: 180 us against a 124.5 floor). Its first run (127 s)
# profiled nothing: ncu's -k matches the bare function name, without template arguments (now the launch skip
# picks the stage: the calls alternate stage 1 and 2), and the DeepSeek-V3 bench's 56 GB of layer copies made
# each replay pass back up device memory (now one pass of two metrics, two copies).
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28d-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
mkdir -p $R/st
for stage in 1 2; do
  MOE_BIN=/tmp/n/bin NCU_SKIP=$((7 + stage)) OUT=$R/st/swapped-stage$stage-m256 \
    BENCH_ARGS="bench --shapes qwen3-30b-a3b --formats fp8_block --M 256" \
    timeout "$(cap 70 5)" scripts/profile-stalls expert_wgmma_swap 2>&1 | tail -1
  echo "stalls stage $stage t=$(el)"
done
rm -f $R/st/*/*.ncu-rep
grep -E "^  [a-z].*\(|Duration|DRAM Throughput|Stall (Long|Wait|Barrier|Short|Not Sel)" $R/st/*/*details.txt | cut -c1-150 | head -18
pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout "$(cap 120 5)" "$NCU" --clock-control none -k 'regex:swap_ab|prologue|combine|route' --launch-skip 24 \
  --launch-count 10 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  /tmp/n/bin/moe bench --shapes deepseek-v3 --formats fp8_block --M 1 --copies 2 > $R/dsv3-m1-kernels.log 2>&1
echo "dsv3 m1 kernels rc $? t=$(el)"
grep -E "^  [a-z].*\(|gpu__time|dram__" $R/dsv3-m1-kernels.log | sed 's/(unnamed>::SwapAbArgs)//' | cut -c1-120 | head -40
pack
echo "done t=$(el)"
