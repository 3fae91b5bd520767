#!/usr/bin/env bash
# Session 15, call 2. next/all13 passed gpu-check (call 1) but regressed at large M (qwen3 fp8 M=4096 3385 vs
# 879 us; deepseek-v3-tp8 M=256 959 vs 518) and the model at batch 1 (3.485 vs 3.013 ms, the same with
# MOE_COMBINE_IN_NORM=0). Part 1 finds which change (single-feature builds on main: group, pq, tmaa; session
# 12's next/all = s12; next/all13 = a13 with its switches). Part 2: next/wgmma-decode's GPU tests and its
# decode A/B (wd.sh's first half). Carry: .carry/bisect2.tar.xz .carry/wd-gpu.tar.xz .carry/s15.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=565
left() { echo $(( END - $(el) )); }
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
mkdir -p /tmp/b /tmp/wd $OUT/b $OUT/wdo && tar -C /tmp/b -xJf .carry/bisect2.tar.xz && tar -C /tmp/wd -xJf .carry/wd-gpu.tar.xz
cp -r /tmp/wd/bin /tmp/b/wd
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/wd/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/b/gpu.txt 2>&1
echo "unpacked t=$(el)"
op() {  # name bin env...: the MoE op at large M
  local name=$1 bin=$2; shift 2
  [ $(left) -lt 330 ] && return
  echo "== op $name" >> $OUT/b/op.log
  env "$@" timeout 60 /tmp/b/$bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
    --M 256,1024,4096 --paths auto 2>&1 | grep -E "^qwen|^deepseek" | sed "s/^/$name /" >> $OUT/b/op.log
}
model() {
  local name=$1 bin=$2; shift 2
  [ $(left) -lt 330 ] && return
  env "$@" timeout 40 /tmp/b/$bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 \
    | grep -E "^decode" | sed "s/^/$name /" >> $OUT/b/model.log
}
for round in 1 2; do
  model main main; model s12 s12; model a13 a13; model a13-nocomb a13 MOE_COMBINE_IN_NORM=0
  model wd wd; model wd-like-a13 wd MOE_ROUTER_PROLOGUE=0 MOE_SMALL_GROUPING=0
done
echo "models t=$(el)"; sort -k1,1 -k3,3n $OUT/b/model.log
op main main; op a13 a13; op s12 s12; op group group; op pq pq; op tmaa tmaa
op a13-notmaa a13 MOE_WGMMA_TMA_A=0; op a13-noquanth a13 MOE_WGMMA_QUANT_H=0; op a13-noswap a13 MOE_WGMMA_SWAP=0
op a13-notmaa-noquanth a13 MOE_WGMMA_TMA_A=0 MOE_WGMMA_QUANT_H=0
echo "ops t=$(el)"; grep -v "^==" $OUT/b/op.log | awk '{printf "%-22s %-16s %5s %9s %9s %s\n", $1, $2, $4, $5, $6, $NF}'
for v in "main" "a13 MOE_COMBINE_IN_NORM=0"; do
  [ $(left) -lt 320 ] && break
  set -- $v; b=$1; shift
  env MOE_STEP_STAMPS=1 "$@" timeout 30 /tmp/b/$b/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1 --prefill 0 \
    > $OUT/b/stamps-$b.log 2>&1; echo "stamps $b"; grep -E "us each|^decode" $OUT/b/stamps-$b.log
done
echo "part 1 done t=$(el)"
# Part 2: next/wgmma-decode's tests, then Auto with MOE_DECODE_WGMMA=1 against without, same binary.
timeout $(cap 120 150) /tmp/wd/bin/cuda_forced_paths_test > $OUT/wdo/forced-paths.log 2>&1
echo "forced paths rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|Failure" $OUT/wdo/forced-paths.log | head -12
timeout $(cap 100 120) /tmp/wd/bin/cuda_fused_moe_test > $OUT/wdo/fused-moe.log 2>&1
echo "fused moe rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|Failure" $OUT/wdo/fused-moe.log | head -12
timeout $(cap 60 100) /tmp/wd/bin/cuda_model_test --gtest_filter='cuda_model_router*:cuda_model_combine*:*consistency*:*graphs*' \
  > $OUT/wdo/model-tests.log 2>&1
echo "model tests rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|Failure" $OUT/wdo/model-tests.log | head -10
timeout $(cap 40 90) /tmp/wd/bin/router_prologue_gpu_test > $OUT/wdo/router-prologue-test.log 2>&1
echo "router prologue test rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|Failure" $OUT/wdo/router-prologue-test.log | head -10
printf '#!/bin/sh\nMOE_DECODE_WGMMA=1 exec /tmp/wd/bin/moe "$@"\n' > /tmp/wd/wg; chmod +x /tmp/wd/wg
if [ $(left) -gt 60 ]; then
  AB_M=1,2,4,8,16 AB_SHAPES=qwen3-30b-a3b,deepseek-v3,deepseek-v3-tp8,qwen3-next-80b-a3b AB_FORMATS=fp8_block AB_MODEL=1 \
    timeout $(cap 200) scripts/ab-moe-bench /tmp/wd/bin/moe /tmp/wd/wg 1 > $OUT/wdo/ab-swapab-vs-wgmma.log 2>&1
  echo "ab t=$(el)"; cat $OUT/wdo/ab-swapab-vs-wgmma.log
fi
echo "done t=$(el)"
