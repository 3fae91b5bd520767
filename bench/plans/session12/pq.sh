#!/usr/bin/env bash
# Branch next/prologue-quant (71ea14e): its GPU tests, then the MoE op against main at M=128..4096.
# Carry: .carry/first12.tar.xz (lib/, main/moe) .carry/pq.tar.xz .carry/pq.sh
set -uo pipefail
start=$(date +%s); t() { echo "t=$(( $(date +%s) - start ))"; }
mkdir -p /tmp/c && { [ -d /tmp/c/lib ] || tar -C /tmp/c -xJf .carry/first12.tar.xz; }
[ -d /tmp/c/pq ] || tar -C /tmp/c -xJf .carry/pq.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/c/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
R=/tmp/pqr; mkdir -p $R; P=/tmp/c/pq
timeout 150 $P/cuda_forced_paths_test --gtest_color=no > $R/pq-forced.log 2>&1; echo "pq forced rc=$?"; grep -E "FAILED|PASSED|Failure" $R/pq-forced.log | head
t; timeout 120 $P/cuda_fused_moe_test --gtest_color=no > $R/pq-fused.log 2>&1; echo "pq fused rc=$?"; grep -E "FAILED|PASSED|Failure" $R/pq-fused.log | head
t; AB_M=128,256,1024,4096 AB_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8 AB_FORMATS=fp8_block AB_MODEL=0 timeout 200 scripts/ab-moe-bench /tmp/c/main/moe $P/moe 2 > $R/pq-ab.log 2>&1; tail -12 $R/pq-ab.log
t; tar -C /tmp -czf $OUT/pq.tgz pqr
