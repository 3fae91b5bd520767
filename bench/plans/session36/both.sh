#!/usr/bin/env bash
# Session 36's plan for one call (the device refused most starts): the quick gpu-check owed since session 34
# (main's kernels after session 35's removals, never run on a GPU) and the first steps of first.sh (the
# instruction-fetch probe, the warm-up pass's tests and A/B). Carry: .carry/s36-both.tar.xz (main's
# binaries in bin/ as scripts/pack-gpu-carry packs them, branch next/s35-warm-code's moe and fused tests in
# warm/; one xz stream with a 256 MiB dictionary: the near-identical binaries cost ~nothing twice) and
# .carry/icache_probe.
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s36-both.tar.xz /tmp/carry
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
W=/tmp/carry/warm
if [ -x .carry/icache_probe ]; then
  timeout "$(cap 25 30)" .carry/icache_probe > $R/icache.log 2>&1
  echo "icache probe rc $?"
  cat $R/icache.log
  pack
fi
quick_gpu_check /tmp/carry/bin "${GC_RESERVE:-150}"
pack
timeout "$(cap 40 60)" $W/cuda_forced_paths_test --gtest_filter='*Fused*' > $R/fused-tests.log 2>&1
echo "warm: forced-path fused tests rc $?"
MOE_FUSED=1 timeout "$(cap 60 60)" $W/cuda_fused_moe_test > $R/fused-moe-tests.log 2>&1
echo "warm: fused-MoE tests with MOE_FUSED=1 rc $?"
grep -hE "^\[  (PASSED|FAILED)" $R/fused-tests.log $R/fused-moe-tests.log | head -6
pack
for round in 1 2; do
  [ "$(cap 40 0)" -lt 40 ] && break
  op_rows "r$round auto" $W/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4 >> $R/warm.log
  for w in 0 1; do
    MOE_FUSED_WARM_CODE=$w op_rows "r$round fused-warm$w" $W/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
      --M 1,2,4 --paths fused >> $R/warm.log
  done
  pack
done
pivot_rows $R/warm.log
if [ "$(cap 30 0)" -ge 30 ]; then
  MOE_FUSED_TIMELINE=1 timeout "$(cap 30 5)" $W/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 \
    --paths fused > $R/fused-tl.log 2>&1
  grep -A20 "fused timeline" $R/fused-tl.log
fi
pack
echo "done t=$(el)"
