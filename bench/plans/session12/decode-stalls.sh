#!/usr/bin/env bash
# Where a decode layer's dense kernels spend their time after the predecessor wait (fp8 q/k/v and o GEMVs
# 7.7 / 8.2 us for 10.5 / 8.4 MB already in registers; decode attention 12.5 us at context 512): per-kernel ncu
# times of one step, then warp-stall samples per instruction of the fp8 GEMV and decode attention.
# Carry: .carry/first12.tar.xz .carry/decode-stalls.sh
set -uo pipefail
mkdir -p /tmp/c && { [ -d /tmp/c/lib ] || tar -C /tmp/c -xJf .carry/first12.tar.xz; }
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/c/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=/usr/local/cuda/bin/ncu; R=/tmp/dst; mkdir -p $R; B=/tmp/c/main/moe
# Decode attention's split size first (cheap): MOE_ATTENTION_SPLIT_KEYS (default 128: 4 splits at context 512),
# model fp8 decode batch 1 at contexts 512 and 4096.
for ck in "512 128" "512 64" "512 256" "512 512" "4096 128" "4096 512"; do
  set -- $ck
  printf "ctx %s split_keys %s: " $1 $2
  MOE_ATTENTION_SPLIT_KEYS=$2 timeout 60 $B bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1 \
    --prefill 0 --context $1 2>&1 | grep -E "^decode" | awk '{print $4, "ms (floor", $5 ")"}'
done | tee $R/split-keys.txt
OUT=$R NCU=$NCU timeout 150 scripts/profile-model-decode $B > $R/kernels.txt 2>&1; head -45 $R/kernels.txt
for k in gemv_kernel attention_decode; do
  timeout 150 $NCU --clock-control none -k regex:$k --launch-skip 20 --launch-count 3 --section WarpStateStats \
    --section SourceCounters --section SpeedOfLight --import-source no -f -o $R/$k \
    $B bench --random-shape qwen3-30b-a3b --format fp8_block --layers 4 --batches 1 --prefill 16 --reps 3 \
    > $R/$k-run.log 2>&1; echo "$k ncu rc $?"
  $NCU --import $R/$k.ncu-rep --page source --csv --print-source sass > $R/$k-sass.csv 2>/dev/null
  python3 scripts/stall-summary $R/$k-sass.csv 20 > $R/$k-stalls.txt 2>&1; head -30 $R/$k-stalls.txt
  $NCU --import $R/$k.ncu-rep --page details 2>/dev/null | grep -E "Duration|Throughput|Issued|Eligible|Active Warps" | head -12
  xz -9 $R/$k-sass.csv; rm -f $R/$k.ncu-rep
done
tar -C /tmp -czf $OUT/dst.tgz dst
