#!/usr/bin/env bash
# Session 16, diagnosis of the fault left after 27325ee: separate processes of the failing test, traced.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
R=/tmp/r; mkdir -p $R /tmp/m
tar -C /tmp/m -xJf .carry/m16d-gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/m/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
T=/tmp/m/bin/cuda_fused_moe_test
F='Shapes/FusedMoeGpu.MatchesReferenceAtEveryM/qwen3_30b_a3b_bf16'
one() {  # name, env...
  local n=$1; shift
  env MOE_TEST_TRACE=1 "$@" timeout 40 $T --gtest_filter="$F" > $R/$n.log 2>&1
  local rc=$?
  echo "$n rc=$rc calls=$(grep -c 'trace: M=' $R/$n.log) last=$(grep 'trace: M=' $R/$n.log | tail -1) $(grep -m1 -E 'faulted|Illegal|illegal' $R/$n.log | cut -c1-150) t=$(el)"
}
for i in 1 2 3 4 5 6; do one def$i; done
for i in 1 2 3; do one nosr$i MOE_SWAP_AB_SELF_ROUTE=0; done
for i in 1 2 3; do one sync$i MOE_TEST_SYNC_PARTS=1; done
for i in 1 2; do one nomb$i MOE_GROUPING_MULTIBLOCK=0; done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
MOE_TEST_TRACE=1 timeout 150 $CS --tool memcheck --print-limit 5 $T --gtest_filter="$F" > $R/memcheck.log 2>&1
echo "memcheck rc $? t=$(el)"; grep -E "Invalid|at 0x|by thread|Address|ERROR SUMMARY|trace: M" $R/memcheck.log | grep -v "trace: M" | head -20
grep 'trace: M=' $R/memcheck.log | tail -1
tar -C /tmp -czf $OUT/r.tgz r
