#!/usr/bin/env bash
# The first GPU call after sessions 17 and 18 (neither had a GPU): one call, about 9 minutes, ends by END.
# 1. gpu-check of main: every GPU test with poisoned workspaces (among them the new ones: the grouped GEMM with
#    y in bf16 against each kernel's fp32 y in cuda_forced_paths_test, CompactGemvKeepsTheBits in
#    cuda_model_test, the joint wave's block count and L2AheadSameBits in cuda_fused_moe_test), the CUDA cases
#    (and again with the four switches on), fixtures, benches, peer, model, and `moe bench --boundaries` (what
#    one kernel boundary costs: stream order, PDL wait, a counter, a persistent kernel's barrier).
# 2. The decode step with the compact fp8 GEMV (MOE_GEMV_COMPACT=1, session 17, untimed) against the register
#    kernel, the same binary, alternated twice: ms per step at batch 1 and 8. Make it the default if batch 1
#    drops and CompactGemvKeepsTheBits passed in step 1.
# 3. main's untimed MoE changes against eb2257a, same lease: session 16's swapped-tile rule by shape (9e2ab51)
#    and wgmma_ring.cuh, and session 17's grouped-GEMM y in bf16 (MOE_GROUPED_Y_BF16=1 against =0, the same
#    binary): DeepSeek-V3 TP8, Qwen3-30B-A3B and Qwen3-235B-A22B TP8 fp8 at M=1, 8 (the swap-AB kernels with
#    sessions 17-18's switches compiled in and off, against eb2257a's) and 256..4096. Keep y in bf16 on by
#    default if it is faster (it should be at M=1024 and 4096: half of y's bytes, 268-940 MB at 4096) and the
#    forced-path test's "y in bf16" rows passed; revert 9e2ab51 if DeepSeek TP8 M=256..512 does not drop.
# (The kernel timelines and ncu profiles are second.sh's, the second call.)
# Carry: .carry/s18-gpu.tar.xz (main, scripts/pack-gpu-carry), .carry/m16f-gpu.tar.xz (eb2257a), .carry/first18.sh
# Run:   END=560 bash .carry/first18.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-560}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R /tmp/n /tmp/o
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures --exclude='*.ncu-rep' r 2>/dev/null; }
tar -C /tmp/n -xJf .carry/s18-gpu.tar.xz && tar -C /tmp/o -xJf .carry/m16f-gpu.tar.xz bin/moe
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
echo "unpacked t=$(el)"

# 1. gpu-check of main, whole (about 150 s on an H200 in session 16; more tests now).
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 280 200) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED|differ|not the first|vs fp32 y|Compact" $R/gc/gpu-tests.log | head -24
sed -n '/== summary/,$p' $R/gc/gc.log | head -24
pack

# 2. The compact GEMV in the decode step.
for run in c0 c1 c0 c1; do
  [ $(cap 999 120) -gt 30 ] || break
  MOE_GEMV_COMPACT=${run:1:1} timeout $(cap 60 120) /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1,8 --prefill 0 2>&1 | grep -E "^decode" | sed "s/^/$run /"
  echo "$run t=$(el)" >&2
done > $R/compact.log
cat $R/compact.log
pack

# 3. The MoE op: old (eb2257a), new (main), new with y in bf16, alternated.
SH=deepseek-v3-tp8,qwen3-30b-a3b,qwen3-235b-a22b-tp8
for run in o1 n1 y1 n2; do
  [ $(cap 999) -gt 25 ] || break
  b=$([ ${run:0:1} = o ] && echo o || echo n)
  env MOE_GROUPED_Y_BF16=$([ ${run:0:1} = y ] && echo 1 || echo 0) timeout $(cap 50) /tmp/$b/bin/moe bench \
    --shapes $SH --formats fp8_block --M 1,8,256,512,1024,4096 --paths auto 2>&1 | grep -E "^(deepseek|qwen)" |
    sed "s/^/$run /"
  echo "$run t=$(el)" >&2
done > $R/ab.log
echo "a/b t=$(el)"
awk '{k=$2" "$4; v[k]=v[k]" "$1"="$5} END{for(k in v) print k, v[k]}' $R/ab.log | sort -k1,1 -k2,2n
echo "done t=$(el)"; pack
