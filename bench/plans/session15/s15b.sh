#!/usr/bin/env bash
# Session 15, call 3: branch next/merge15 (next/all13 + defaults from calls 1-2: TMA-A, h in the epilogue and
# the combine in the norm off; MOE_WGMMA_SWAP_MAX_TILE knob). 1. its gpu-check (all GPU tests, cases, fixtures,
# benches, peer, model); 2. main vs merge15 same lease (op and model); 3. the swapped kernel's largest tile
# (16/32/64/off) at M=128..1024; 4. per-kernel ncu of one decode step (issue 5). Ends by 560 s.
# Carry: .carry/m15-gpu.tar.xz .carry/bisect2.tar.xz .carry/s15b.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-400}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R /tmp/m /tmp/b
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures r 2>/dev/null; }
tar -C /tmp/m -xJf .carry/m15-gpu.tar.xz && tar -C /tmp/b -xJf .carry/bisect2.tar.xz main
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/m/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
echo "unpacked t=$(el)"
mkdir -p $R/gc
# gpu-check first and whole (about 125 s on an H200): it keeps only 60 s for the rest, which is measured after
# it with what time is left (session 15's END=280 run cut gpu-check to 74 s by reserving 200).
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/m/bin OUT=$R/gc timeout $(cap 300 60) scripts/gpu-check > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"; grep -E "^\[  FAILED|differ|not the first" $R/gc/gpu-tests.log | head -20; sed -n '/== summary/,$p' $R/gc/gc.log | head -20; pack
if [ $(cap 999 120) -gt 40 ]; then
  AB_M=1,8,64,256,1024,4096 AB_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 AB_FORMATS=fp8_block AB_MODEL=1 \
    timeout $(cap 120 120) scripts/ab-moe-bench /tmp/b/main/moe /tmp/m/bin/moe 1 > $R/ab-main.log 2>&1
  echo "ab t=$(el)"; cat $R/ab-main.log; pack
fi
for t in 16 32 64 off; do
  [ $(cap 999 90) -gt 20 ] || break
  env $([ $t = off ] && echo MOE_WGMMA_SWAP=0 || echo MOE_WGMMA_SWAP_MAX_TILE=$t) timeout $(cap 60 90) /tmp/m/bin/moe bench \
    --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8,qwen3-next-80b-a3b --formats fp8_block \
    --M 128,256,384,512,768,1024,2048 --paths auto 2>&1 | grep -E "^qwen|^deepseek" | sed "s/^/tile-$t /" >> $R/swap-tile.log
done
echo "swap tile t=$(el)"; sort -k2,2 -k4,4n -k1,1 $R/swap-tile.log | awk '{printf "%-9s %-20s %5s %9s %9s\n", $1, $2, $4, $5, $6}'; pack
if [ $(cap 999) -gt 60 ]; then
  OUT=$R NCU=/usr/local/cuda/bin/ncu timeout $(cap 150) scripts/profile-model-decode /tmp/m/bin/moe > $R/kernels.txt 2>&1
  echo "kernels t=$(el)"; head -45 $R/kernels.txt; xz -9 $R/profile-model-decode.csv; pack
fi
echo "done t=$(el)"; pack
