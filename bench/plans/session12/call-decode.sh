#!/usr/bin/env bash
# The next GPU session's second call (issue 5 first, then issue 4's DeepSeek rows), every step's timeout from the
# time left so the call ends before the 600 s limit, results packed after each step:
# 1. decode attention's split size on the model (MOE_ATTENTION_SPLIT_KEYS; fp8 batch 1, contexts 512 and 4096),
#    next/all13's binary (the branch to merge);
# 2. per-kernel ncu times of one decode step (scripts/profile-model-decode), next/all13;
# 3. warp-stall samples of the fp8 GEMV and decode attention (the q/k/v GEMV took 7.7 us after its wait with its
#    weights in registers; attention 12.5 us at context 512);
# 4. per-kernel ncu times of the MoE op for DeepSeek / Qwen3-Next / Qwen3-30B shapes (ds.sh's loop).
# Carry: .carry/all13-gpu.tar.xz .carry/call-decode.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=570
cap() { local left=$(( END - $(el) - ${2:-0} )); [ $left -lt $1 ] && echo $left || echo $1; }
R=/tmp/cd; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/cd.tgz cd 2>/dev/null; }
mkdir -p /tmp/all
[ -x /tmp/all/bin/moe ] || tar -C /tmp/all -xJf .carry/all13-gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/all/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=/usr/local/cuda/bin/ncu; B=/tmp/all/bin/moe
echo "unpacked t=$(el)"
for ck in "512 128" "512 64" "512 256" "512 512" "4096 128" "4096 512"; do
  set -- $ck
  [ $(cap 999 420) -gt 20 ] || break  # at most ~150 s for the sweep
  printf "ctx %s split_keys %s: " $1 $2
  MOE_ATTENTION_SPLIT_KEYS=$2 timeout $(cap 60 420) $B bench --random-shape qwen3-30b-a3b --format fp8_block \
    --batches 1 --prefill 0 --context $1 2>&1 | grep -E "^decode" | awk '{print $4, "ms (floor", $5 ")"}'
done | tee $R/split-keys.txt
echo "sweep t=$(el)"; pack
OUT=$R NCU=$NCU timeout $(cap 150 300) scripts/profile-model-decode $B > $R/kernels.txt 2>&1; head -45 $R/kernels.txt
echo "kernels t=$(el)"; pack
for k in gemv_kernel attention_decode; do
  [ $(cap 999 100) -gt 40 ] || break
  timeout $(cap 120 100) $NCU --clock-control none -k regex:$k --launch-skip 20 --launch-count 3 --section WarpStateStats \
    --section SourceCounters --section SpeedOfLight --import-source no -f -o $R/$k \
    $B bench --random-shape qwen3-30b-a3b --format fp8_block --layers 4 --batches 1 --prefill 16 --reps 3 \
    > $R/$k-run.log 2>&1; echo "$k ncu rc $? t=$(el)"
  $NCU --import $R/$k.ncu-rep --page source --csv --print-source sass > $R/$k-sass.csv 2>/dev/null
  python3 scripts/stall-summary $R/$k-sass.csv 20 > $R/$k-stalls.txt 2>&1; head -30 $R/$k-stalls.txt
  $NCU --import $R/$k.ncu-rep --page details 2>/dev/null | grep -E "Duration|Throughput|Issued|Eligible|Active Warps" | head -12
  xz -9 $R/$k-sass.csv; rm -f $R/$k.ncu-rep; pack
done
for sm in "deepseek-v3 1" "deepseek-v3-tp8 1" "qwen3-30b-a3b 1" "deepseek-v3-tp8 64" "qwen3-next-80b-a3b 1" "qwen3-30b-a3b 8"; do
  set -- $sm
  [ $(cap 999) -gt 45 ] || break
  echo "== $1 M=$2" | tee -a $R/ds.txt
  timeout $(cap 90) $NCU --metrics gpu__time_duration.sum -k regex:"route|align|prologue|swap_ab|expert|rows|combine|tiles|stage|decode|group" -c 14 \
    $B bench --shapes $1 --formats fp8_block --M $2 --paths auto --copies 2 2>&1 | grep -E "Context|gpu__time_duration" |
    sed -E 's/\(moe::cuda::[A-Za-z]+(, int)?.*\)//; s/, Context.*//; s/void moe::cuda::\(anonymous namespace\):://' |
    cut -c1-140 | paste - - | awk '{print $1, $2, $NF}' | tee -a $R/ds.txt
  pack
done
echo "done t=$(el)"; pack
