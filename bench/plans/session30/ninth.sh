#!/usr/bin/env bash
# Session 30, ninth call. Carries: .carry/s30g-moe.tar.xz (bin/moe and lib/ of branch next/s30-gemv256, NOT
# RUN ON A GPU: the model's tensor-core fp8 decode GEMV copies its weights with L2's 256-byte prefetch size,
# as the swap-AB stages' loads now do) and .carry/s30f-moe.tar.xz (bin/moe at 1bfdf09, main's kernels).
# The decode step (Qwen3-30B-A3B fp8, batches 1 and 8), the two binaries alternated four times.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30g-moe.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s30f-moe.tar.xz bin/moe
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
binaries_ab $R/decode-ab.log /tmp/n/bin/moe /tmp/m/bin/moe 4
pack
echo "done t=$(el)"
