#!/usr/bin/env bash
# The second GPU call after session 17: where the decode step's time goes, then the joint-wave switch. Ends by END.
# 1. A decode layer's kernel timeline (measuring build, MOE_KERNEL_TIMELINE; session 11's method) with the
#    register GEMV and with the compact one (MOE_GEMV_COMPACT=1): the q/k/v and o GEMVs' time after their
#    programmatic wait is the number to compare (session 11: 7.7 and 8.2 us with their weights loaded).
# 2. ncu of the decode step's fp8 GEMVs, both kernels: speed of light, warp states (no_instruction is the
#    instruction-fetch hypothesis), occupancy; source-level stall samples.
# 3. The joint wave of the shared and routed swap-AB launches against apart (MOE_SWAP_AB_JOINT_WAVE=1).
# (ncu of the grouped GEMM is third.sh's.)
# Carry: .carry/tr-gpu.tar.xz (main), .carry/measuring-kt.tar.xz (scripts/build-measuring MOE_KERNEL_TIMELINE,
#        bin/moe), .carry/second17.sh.   Run: END=560 bash .carry/second17.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-560}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r2; mkdir -p $R /tmp/n /tmp/m
pack() { tar -C /tmp -czf $OUT/r2.tgz --exclude='*.ncu-rep' r2 2>/dev/null; }
tar -C /tmp/n -xJf .carry/tr-gpu.tar.xz && tar -C /tmp/m -xJf .carry/measuring-kt.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt

# 1. Timelines.
for c in 0 1; do
  MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=$c timeout $(cap 80 250) /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 > $R/timeline-compact$c.log 2>&1
  echo "timeline compact=$c rc $? t=$(el)"; grep -A14 -i "launch" $R/timeline-compact$c.log | head -16
done
pack

# 2. The GEMVs under ncu: the 16-token prefill runs GEMMs (the GEMV takes at most 4 rows), so the first 4
#    matching launches are the first decode step's (2 layers x q/k/v and o): skip them, profile the second's.
for c in 0 1; do
  MOE_GEMV_COMPACT=$c timeout $(cap 100 200) $NCU --set full --import-source yes -k 'regex:gemv_(compact_)?kernel' \
    --launch-skip 4 --launch-count 4 -o $R/gemv$c /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --layers 2 --batches 1 --prefill 16 --reps 3 > $R/gemv$c-run.log 2>&1
  echo "ncu gemv compact=$c rc $? t=$(el)"
  $NCU --import $R/gemv$c.ncu-rep --page details --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section LaunchStats > $R/gemv$c-details.txt 2>&1
  grep -E "gemv_|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|No Instruction" \
    $R/gemv$c-details.txt | head -30
  $NCU --import $R/gemv$c.ncu-rep --page source --csv --print-source sass > $R/gemv$c-sass.csv 2>/dev/null
  python3 scripts/stall-summary $R/gemv$c-sass.csv 20 > $R/gemv$c-stalls.txt 2>&1; head -30 $R/gemv$c-stalls.txt
  xz -6 $R/gemv$c-sass.csv
  pack
done

# 3. The joint wave of the shared and routed swap-AB launches (MOE_SWAP_AB_JOINT_WAVE=1, session 17, untimed)
#    against apart, the same binary, alternated twice: DeepSeek-V3 (full layer, M=1: 156 us, floor 86) and
#    Qwen3-Next at decode sizes. Make it the default if DeepSeek-V3 M=1 drops and nothing rises.
for run in j0 j1 j0 j1; do
  [ $(cap 999) -gt 30 ] || break
  MOE_SWAP_AB_JOINT_WAVE=${run:1:1} timeout $(cap 70) /tmp/n/bin/moe bench --shapes deepseek-v3,qwen3-next-80b-a3b \
    --formats fp8_block --M 1,4,8 --paths auto 2>&1 | grep -E "^(deepseek|qwen)" | sed "s/^/$run /"
  echo "$run t=$(el)" >&2
done > $R/joint.log
awk '{k=$2" "$4; v[k]=v[k]" "$1"="$5} END{for(k in v) print k, v[k]}' $R/joint.log | sort -k1,1 -k2,2n
pack

echo "done t=$(el)"; pack
