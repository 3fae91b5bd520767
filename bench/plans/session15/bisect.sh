#!/usr/bin/env bash
# Session 15: next/all13 passed gpu-check but regressed at large M (qwen3 fp8 M=4096 3385 vs 879 us; deepseek-v3-tp8
# M=256 959 vs 518) and the model at batch 1 (3.485 vs 3.013 ms, the same with MOE_COMBINE_IN_NORM=0). Which
# change: the single-feature builds (group, pq, swap, tmaa on main), session 12's next/all (s12) and next/all13
# with its switches, each once, same lease. Carry: .carry/bisect.tar.xz .carry/bisect.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=560
left() { echo $(( END - $(el) )); }
mkdir -p /tmp/b $OUT/b && tar -C /tmp/b -xJf .carry/bisect.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/b/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
echo "unpacked t=$(el)"
op() {  # name env... : the MoE op at large M
  local name=$1; shift
  [ $(left) -lt 40 ] && return
  echo "== op $name" >> $OUT/b/op.log
  env "$@" timeout $(( $(left) < 90 ? $(left) : 90 )) /tmp/b/$BIN/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
    --M 256,1024,4096 --paths auto 2>&1 | grep -E "^qwen|^deepseek" | sed "s/^/$name /" >> $OUT/b/op.log
  echo "op $name t=$(el)"
}
model() {
  local name=$1; shift
  [ $(left) -lt 30 ] && return
  env "$@" timeout $(( $(left) < 60 ? $(left) : 60 )) /tmp/b/$BIN/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 \
    | grep -E "^decode" | sed "s/^/$name /" >> $OUT/b/model.log
  echo "model $name t=$(el)"
}
BIN=main model main
BIN=s12 model s12
BIN=a13 model a13
BIN=a13 model a13-nocomb MOE_COMBINE_IN_NORM=0
BIN=a13 model a13-noside MOE_SHARED_STREAM=0
cat $OUT/b/model.log
BIN=main op main
BIN=a13 op a13
BIN=s12 op s12
BIN=group op group
BIN=pq op pq
BIN=swap op swap
BIN=tmaa op tmaa
BIN=a13 op a13-notmaa MOE_WGMMA_TMA_A=0
BIN=a13 op a13-noquanth MOE_WGMMA_QUANT_H=0
BIN=a13 op a13-noswap MOE_WGMMA_SWAP=0
BIN=a13 op a13-noside MOE_SHARED_STREAM=0
grep -E "M|fp8" $OUT/b/op.log | awk '{print $1, $2, $4, $5, $6, $NF}'
# the batch-1 step's parts: main against next/all13 with the combine off
if [ $(left) -gt 40 ]; then
  for v in "main" "a13 MOE_COMBINE_IN_NORM=0"; do set -- $v; b=$1; shift
    env MOE_STEP_STAMPS=1 "$@" timeout 40 /tmp/b/$b/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1 --prefill 0 \
      > $OUT/b/stamps-$b.log 2>&1; grep -E "us each|^decode" $OUT/b/stamps-$b.log; done
fi
echo "done t=$(el)"
