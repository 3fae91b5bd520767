#!/usr/bin/env bash
# Session 29, seventh call. Carries: .carry/s29h-gpu.tar.xz (branch next/s29-groups at b365f3d, NOT RUN ON A
# GPU: DeepSeek-V3's groups of 32 through one shuffle tree, picked lane by lane) and .carry/s29g-moe.tar.xz
# (main's bin/moe at 3d5a597).
#  1. the GPU tests of the DeepSeek shape (every M against the reference, same bits, batch invariance);
#  2. main against the branch, DeepSeek-V3 TP8 and full fp8 at M = 1..8, two rounds; the prologue's time.
set -uo pipefail
export END=${END:-200}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29h-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s29g-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
timeout "$(cap 90 80)" /tmp/n/bin/cuda_fused_moe_test --gtest_filter='*deepseek*' > $R/tests-deepseek.log 2>&1
echo "tests rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED) |tests ran" $R/tests-deepseek.log | head -8
pack
for round in 1 2; do
  for v in main new; do
    b=/tmp/n/bin/moe && [ $v = main ] && b=/tmp/m/bin/moe
    op_rows "round=$round $v" $b --shapes deepseek-v3-tp8 --formats fp8_block,bf16 --M 1,2,4,8
  done
done > $R/ab-groups.log
cut -c1-90 $R/ab-groups.log
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in /tmp/m/bin/moe /tmp/n/bin/moe; do
  timeout 30 "$NCU" --clock-control none -k 'regex:prologue' --launch-skip 24 --launch-count 2 \
    --metrics gpu__time_duration.sum $b bench --shapes deepseek-v3-tp8 --formats fp8_block --M 1 --copies 2 2>&1 |
    grep -E "gpu__time" | sed "s|^|$b |"
done | tee $R/prologue-times.log
pack
echo "done t=$(el)"
