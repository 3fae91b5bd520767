#!/usr/bin/env bash
# Session 23, second call: the branch with the tensor-core GEMV on by default (the first call measured it
# faster: decode batch 1 2.466 against 2.693 ms, H200). The timeline with the router kernel's routing phase
# split (prologue_small's marks: warp 0 routed; routed and quantised), ncu on the router kernel alone (warp
# states, per-instruction stall samples: NEXT.md item 2, instruction fetch against scoreboard), then
# gpu-check (the standing figures). Carry: .carry/s23-gpu2.tar.xz (scripts/pack-gpu-carry build) and
# .carry/measuring23b.tar.xz (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE, tar -cJ).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s23-gpu2.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring23b.tar.xz
record_gpu $R/gpu.txt
timeline /tmp/m/bin/moe $R/timeline.log
pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout "$(cap 120 240)" "$NCU" --clock-control none -k regex:router_prologue --launch-skip 8 --launch-count 2 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --section LaunchStats --section SourceCounters --warp-sampling-interval 0 -o $R/ncu-router \
  /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --layers 4 --batches 1 --prefill 16 \
  --reps 3 > $R/ncu-router.log 2>&1
echo "ncu rc $? t=$(el)"
"$NCU" -i $R/ncu-router.ncu-rep --print-details all > $R/ncu-router.txt 2>&1
"$NCU" -i $R/ncu-router.ncu-rep --page source --csv --print-source sass > $R/ncu-router-sass.csv 2>&1
echo "sass csv rc $? lines $(wc -l < $R/ncu-router-sass.csv)"
grep -E "Duration|Stall|Warp Cycles Per Issued|Executed Instructions|No Instruction|Branch" $R/ncu-router.txt | head -40
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
