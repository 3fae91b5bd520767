#!/usr/bin/env bash
# Session 29, first call (main at 1923ea1's kernels; carry .carry/s28e-gpu.tar.xz, or scripts/pack-gpu-carry
# build at main). Session 28 found DeepSeek's one-block prologue (routing, x quantised, grouping) taking 44 us
# at one token under ncu against 7 for Qwen3's, its other 31 warps waiting at the barrier for the routing warp
# (36 of 41 samples); computing each expert's group once took it to 37.7 (op: DeepSeek-V3 TP8 M=1 51.3
# against 58.8 us). The routing warp runs ~1.6k distinct instructions once each: if its time is cold
# instruction fetch (one line of 8 at a time from L2 or DRAM), its samples say "no instruction".
# Branch next/s29-routing (420af9f) compiles SigmoidGrouped as its own router kind (DeepSeek's prologue
# instantiation 3368 SASS instructions against 3840): carry .carry/s29a-moe.tar.xz (its bin/moe alone).
# Steps:
#  1. the prologue's stalls at a fine sampling interval, DeepSeek-V3 TP8 and Qwen3-30B-A3B at M=1;
#  2. the branch's moe against main's at M=1, 2, 8 (DeepSeek-V3 TP8 and full, Qwen3-30B-A3B; two rounds) and
#     both prologues' times under ncu;
#  3. gpu-check (on an H200 if one comes: its column is still session 23's).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28e-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
mkdir -p $R/st
for shape in deepseek-v3-tp8 qwen3-30b-a3b; do
  MOE_BIN=/tmp/n/bin NCU_SKIP=8 NCU_SAMPLING=0 OUT=$R/st/prologue-$shape-m1 \
    BENCH_ARGS="bench --shapes $shape --formats fp8_block --M 1 --copies 2" \
    timeout "$(cap 90 300)" scripts/profile-stalls prologue_small 2>&1 | tail -1
  python3 scripts/stall-summary $R/st/prologue-$shape-m1/stalls-prologue_small-sass.csv 12 | head -16
done
rm -f $R/st/*/*.ncu-rep
pack
mkdir -p /tmp/b && tar -C /tmp/b -xJf .carry/s29a-moe.tar.xz
for round in 1 2; do
  for b in /tmp/n/bin/moe /tmp/b/bin/moe; do
    timeout 60 $b bench --shapes deepseek-v3-tp8,deepseek-v3,qwen3-30b-a3b --formats fp8_block --M 1,2,8 2>&1 |
      grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s|^|round=$round $(dirname "$(dirname $b)") |"
  done
done > $R/ab-router-kind.log
cut -c1-90 $R/ab-router-kind.log
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in /tmp/n/bin/moe /tmp/b/bin/moe; do
  timeout 40 "$NCU" --clock-control none -k 'regex:prologue' --launch-skip 24 --launch-count 2 \
    --metrics gpu__time_duration.sum $b bench --shapes deepseek-v3-tp8 --formats fp8_block --M 1 --copies 2 2>&1 |
    grep -E "gpu__time" | sed "s|^|$b |"
done | tee $R/prologue-times.log
pack
quick_gpu_check /tmp/n/bin 5
pack
echo "done t=$(el)"
