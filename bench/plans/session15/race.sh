#!/usr/bin/env bash
# The next GPU session's first call: find session 15's intermittent illegal address on next/merge15
# (FusedMoeGpu.MatchesReferenceAtEveryM, Qwen3-30B-A3B bf16, ten-run determinism loop at M=8/1024; one failure
# in three runs). compute-sanitizer's memcheck names the faulting kernel; the repeats with switches say which
# change brings it. Carry: .carry/m15-gpu.tar.xz (scripts/pack-gpu-carry on a build of next/merge15) and this.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-540}
left() { echo $(( END - $(el) )); }
mkdir -p /tmp/m $OUT/race && tar -C /tmp/m -xJf .carry/m15-gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/m/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
T=/tmp/m/bin/cuda_fused_moe_test
F='Shapes/FusedMoeGpu.MatchesReferenceAtEveryM/qwen3_30b_a3b_bf16'
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout $(( $(left) < 200 ? $(left) : 200 )) $CS --tool memcheck --print-limit 10 $T --gtest_filter="$F" --gtest_repeat=2 \
  > $OUT/race/memcheck.log 2>&1
echo "memcheck rc $? t=$(el)"; grep -E "Invalid|at .*kernel|by thread|Address|ERROR SUMMARY|FAILED" $OUT/race/memcheck.log | head -20
for v in "default" "MOE_GROUPING_MULTIBLOCK=0" "MOE_WGMMA_SWAP=0" "MOE_SWAP_AB_SELF_ROUTE=0"; do
  [ $(left) -gt 40 ] || break
  env $([ "$v" = default ] || echo "$v") timeout $(( $(left) < 80 ? $(left) : 80 )) $T --gtest_filter="$F" --gtest_repeat=15 \
    > "$OUT/race/repeat-$v.log" 2>&1
  echo "$v rc $? passed $(grep -c '^\[  PASSED' "$OUT/race/repeat-$v.log") failed $(grep -c '^\[  FAILED  \] Shapes' "$OUT/race/repeat-$v.log") t=$(el)"
done
