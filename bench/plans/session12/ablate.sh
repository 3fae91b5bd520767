#!/usr/bin/env bash
# The wgmma grouped GEMM's ablations (branch next/wgmma-ablate, measuring build .carry/measuring/moe with
# MOE_WGMMA_ABLATE): ncu's time of stage 1 and stage 2 with each part switched off. Bits: 1 A rows, 2 weight
# tile, 4 scales, 8 stores, 16 promotion, 32 proxy fence, 64 wgmma. Needs main's libraries: carry
# .carry/ablate-moe.xz and .carry/first12.tar.xz (for lib/).
set -uo pipefail
mkdir -p /tmp/c && { [ -d /tmp/c/lib ] || tar -C /tmp/c -xJf .carry/first12.tar.xz; }
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/c/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=/usr/local/cuda/bin/ncu; B=/tmp/c/ablate-moe; [ -x $B ] || { xz -dc .carry/ablate-moe.xz > $B && chmod +x $B; }; R=/tmp/ab; mkdir -p $R
run() {  # format M bits...
  local fmt=$1 M=$2; shift 2
  for bits in "$@"; do
    t=$(MOE_WGMMA_ABLATE=$bits timeout 60 $NCU --metrics gpu__time_duration.sum -k regex:expert_wgmma_kernel \
        --launch-skip 4 --launch-count 2 $B bench --shapes qwen3-30b-a3b --formats $fmt --M $M --paths mma \
        --copies 2 2>&1 | grep -E "gpu__time_duration" | awk '{print $NF}' | paste -sd' ')
    echo "$fmt M=$M ablate=$bits stage1/stage2 us: $t" | tee -a $R/ablate.txt
  done
}
run fp8_block 4096 0 1 2 3 4 8 16 32 64 7 71
run fp8_block 1024 0 1 2 8 64
run bf16 4096 0 1 8 64
tar -C /tmp -czf $OUT/ab.tgz ab
