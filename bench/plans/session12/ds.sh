#!/usr/bin/env bash
# DeepSeek shapes, where Auto is 2-7x its floor (deepseek-v3 M=1 173 us / 85; deepseek-v3-tp8 M=1 74 / 10.7,
# M=64 746 / 129): every kernel's time in one call (ncu, base clocks) with main's binary, and which path
# Auto takes. Carry: .carry/first12.tar.xz .carry/ds.sh
set -uo pipefail
mkdir -p /tmp/c && { [ -d /tmp/c/lib ] || tar -C /tmp/c -xJf .carry/first12.tar.xz; }
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/c/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=/usr/local/cuda/bin/ncu; R=/tmp/ds; mkdir -p $R
for sm in "deepseek-v3 1" "deepseek-v3-tp8 1" "deepseek-v3-tp8 64" "qwen3-next-80b-a3b 1" "qwen3-30b-a3b 1" "qwen3-30b-a3b 8"; do
  set -- $sm
  echo "== $1 M=$2" | tee -a $R/ds.txt
  timeout 90 $NCU --metrics gpu__time_duration.sum -k regex:"route|align|prologue|swap_ab|expert|rows|combine|tiles|stage|decode" -c 14 /tmp/c/main/moe bench --shapes $1 --formats fp8_block \
    --M $2 --paths auto --copies 2 2>&1 | grep -E "Context|gpu__time_duration" |
    sed -E 's/\(moe::cuda::[A-Za-z]+(, int)?.*\)//; s/, Context.*//; s/void moe::cuda::\(anonymous namespace\):://' |
    cut -c1-140 | paste - - | awk '{print $1, $2, $NF}' | tee -a $R/ds.txt
done
tar -C /tmp -czf $OUT/ds.tgz ds
