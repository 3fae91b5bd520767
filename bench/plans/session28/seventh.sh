#!/usr/bin/env bash
# Session 28, seventh call (main at the routing change; carries .carry/s28e-gpu.tar.xz and the fourth call's
# moe alone, .carry/s28d-moe.tar.xz): the sixth call found DeepSeek's grouped routing taking the one-block
# prologue's 44 us at one token (one warp's ~4.9k dependent instructions, ~200 of each group iteration's 356
# in run-time divisions). Now each expert's group is computed once. Steps: the DeepSeek-V3 and Qwen3-30B-A3B
# M=1..8 op against the fourth call's binary (two rounds, one lease), the prologue's time under ncu, then
# gpu-check (its tests route DeepSeek's shapes against the fp32 reference; the cases too).
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28e-gpu.tar.xz /tmp/n
mkdir -p /tmp/o && tar -C /tmp/o -xJf .carry/s28d-moe.tar.xz
record_gpu $R/gpu.txt
for round in 1 2; do
  for b in /tmp/o/bin/moe /tmp/n/bin/moe; do
    timeout 60 $b bench --shapes deepseek-v3-tp8,deepseek-v3,qwen3-30b-a3b --formats fp8_block --M 1,2,8 2>&1 |
      grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s|^|round=$round $(dirname "$(dirname $b)") |"
  done
done > $R/ab-routing.log
cut -c1-90 $R/ab-routing.log
echo "a/b t=$(el)"
pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 40 "$NCU" --clock-control none -k 'regex:prologue' --launch-skip 24 --launch-count 2 \
  --metrics gpu__time_duration.sum /tmp/n/bin/moe bench --shapes deepseek-v3-tp8 --formats fp8_block --M 1 --copies 2 \
  > $R/prologue-time.log 2>&1
grep -E "^  [a-z].*\(|gpu__time" $R/prologue-time.log | cut -c1-100
pack
quick_gpu_check /tmp/n/bin 5
pack
echo "done t=$(el)"
