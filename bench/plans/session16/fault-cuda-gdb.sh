#!/usr/bin/env bash
# Session 16: name the faulting kernel of the M=8 self-routed fault with cuda-gdb (native timing).
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
R=/tmp/r; mkdir -p $R /tmp/m
tar -C /tmp/m -xJf .carry/m16d-gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/m/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
T=/tmp/m/bin/cuda_fused_moe_test
F='Shapes/FusedMoeGpu.MatchesReferenceAtEveryM/qwen3_30b_a3b_bf16'
G=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -1)
echo "cuda-gdb: $G"
for i in 1 2 3; do
  MOE_TEST_TRACE=1 timeout 100 $G -q -batch -ex "set cuda break_on_launch none" -ex run -ex "info cuda kernels" \
    -ex "bt 3" -ex "x/12i \$pc-0x60" -ex "info cuda threads" -ex "p a.tokens" -ex "p a.g" --args $T --gtest_filter="$F" > $R/gdb$i.log 2>&1
  echo "gdb$i rc $? t=$(el)"
  grep -E "CUDA_EXCEPTION|Exception|swap_ab|kernel|at /|trace: M" $R/gdb$i.log | grep -v "^trace: M" | head -25
  grep "trace: M" $R/gdb$i.log | tail -1
  grep -q "CUDA_EXCEPTION\|Illegal" $R/gdb$i.log && break
  [ $(el) -gt 250 ] && break
done
tar -C /tmp -czf $OUT/r.tgz r
