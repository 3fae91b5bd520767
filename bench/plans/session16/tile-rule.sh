#!/usr/bin/env bash
# The swapped-tile rule by shape (main after session 16, tr-gpu) against eb2257a (m16f-gpu), same lease; then the
# fused-MoE GPU tests of the DeepSeek TP8 shard with the rule.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
mkdir -p /tmp/n /tmp/o && tar -C /tmp/n -xJf .carry/tr-gpu.tar.xz && tar -C /tmp/o -xJf .carry/m16f-gpu.tar.xz bin/moe
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2; do for b in o n; do
  timeout 40 /tmp/$b/bin/moe bench --shapes deepseek-v3-tp8,qwen3-30b-a3b --formats fp8_block --M 128,256,384,512,768,1024 --paths auto 2>&1 \
    | grep -E "^(deepseek|qwen)" | sed "s/^/$b$r /"
done; done > $OUT/tr.log
echo "bench t=$(el)"
awk '{k=$2" "$4; v[k]=v[k]" "$1"="$5} END{for(k in v) print k, v[k]}' $OUT/tr.log | sort -k1,1 -k2,2n
timeout $(( 170 - $(el) )) /tmp/n/bin/cuda_fused_moe_test --gtest_filter='*deepseek*' > $OUT/ds-tests.log 2>&1
echo "ds tests rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|M=256|M=1024" $OUT/ds-tests.log | head -12
