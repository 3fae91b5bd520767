#!/usr/bin/env bash
# Session 40's third plan (carry .carry/s40c.tar.xz, built at 2eba0cf; its measuring build as
# bin/moe-measuring). The swapped kernel's fp8 stage 1 quantising h in its epilogue (MOE_WGMMA_SWAP_QUANT_H),
# so fp8_rows (ncu: 5.3 us at 64 tokens, 6.2 at 256 on the H100) drops out and stage 2 follows stage 1
# directly; with it, both GEMMs launched overlapped and stage 2's first weights requested before its wait
# (its blocks then start on the SMs stage 1's last items leave). Here: the grouped-GEMM forced-path test (the
# new rows' bits), the switch off against on, the overlapped launch with early weights off against on (h
# quantised), ncu's kernels of the call with h quantised, the quick gpu-check with the winners (ab_winner), then
# Auto's paths at 8-32 tokens (is the grouped GEMM ahead of the swap-AB stages at 16 on this card?).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40c.tar.xz || exit 1
grouped_forced_paths 60 400
clocks_start $R/clocks.log
bench_ab $R/quant-ab.log MOE_WGMMA_SWAP_QUANT_H 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 32,64,256
pack
MOE_WGMMA_SWAP_QUANT_H=1 MOE_WGMMA_EARLY_WEIGHTS=1 bench_ab $R/overlapped-ab.log MOE_WGMMA_OVERLAPPED 0,1 \
  $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 64,256
clocks_stop
pack
MOE_WGMMA_SWAP_QUANT_H=$(ab_winner $R/quant-ab.log MOE_WGMMA_SWAP_QUANT_H 0 1)
MOE_WGMMA_OVERLAPPED=0
[ "$MOE_WGMMA_SWAP_QUANT_H" = 1 ] && MOE_WGMMA_OVERLAPPED=$(ab_winner $R/overlapped-ab.log MOE_WGMMA_OVERLAPPED 0 1)
MOE_WGMMA_EARLY_WEIGHTS=$MOE_WGMMA_OVERLAPPED
export MOE_WGMMA_SWAP_QUANT_H MOE_WGMMA_OVERLAPPED MOE_WGMMA_EARLY_WEIGHTS
env | grep -E "^MOE_" | sort | tee $R/switches.txt
call_kernels_ncu $B/moe 64
quick_gpu_check $B 60
grep -E "quantised.* fp8_block\] M=40 |DIFFER" $R/gc/gpu-tests.log | head -4
pack
path_thresholds $B/moe qwen3-30b-a3b fp8_block 8,16,24,32 5
echo "done t=$(el)"
