#!/usr/bin/env bash
# Session 22, fourth call (the last ~4 minutes of device time): ncu on the compact fp8 GEMVs of a decode step,
# each alone, for where the o projection's time goes after its weights land (NEXT.md item 3): speed of light,
# memory, warp states, instruction stats. Carry: .carry/s22-gpu3.tar.xz (the third call's, main's final build).
set -uo pipefail
export END=100
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s22-gpu3.tar.xz /tmp/n
record_gpu $R/gpu.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout "$(cap 90 5)" "$NCU" --clock-control none -k regex:gemv_compact --launch-skip 8 --launch-count 4 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section LaunchStats --section Occupancy \
  /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --layers 4 --batches 1 --prefill 16 \
  --reps 3 > $R/ncu-gemv.txt 2>&1
echo "ncu rc $? t=$(el)"
grep -E "gemv_compact|Duration|Memory Throughput|DRAM Throughput|Stall|Warp Cycles Per Issued|Issue Slots Busy|Grid Size|Registers" $R/ncu-gemv.txt | head -60
pack
