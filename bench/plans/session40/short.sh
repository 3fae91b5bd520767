#!/usr/bin/env bash
# first.sh for little device time (END 160-200): branch next/s39-overlapped's grouped-GEMM forced-path test, the
# overlapped launch and the pair ids ahead each off against on at 64 and 256 tokens (Qwen3-30B-A3B fp8, two
# rounds), ncu's time of each kernel of the call at 64 tokens, then the grouping's tile list off against on. Carry: .carry/s40a.tar.xz
# (3e956bc); the early weights with the overlapped launch on, after it.
set -uo pipefail
export END=${END:-200}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40a.tar.xz || exit 1
grouped_forced_paths 45 100
clocks_start $R/clocks.log
for var in MOE_WGMMA_OVERLAPPED MOE_WGMMA_SWAP_AHEAD; do
  bench_ab $R/$var-ab.log $var 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 64,256
  pack
done
clocks_stop
MOE_WGMMA_OVERLAPPED=1 bench_ab $R/early-ab.log MOE_WGMMA_EARLY_WEIGHTS 0,1 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,256
pack
call_kernels_ncu $B/moe 64
bench_ab $R/tiles-ab.log MOE_GROUPING_TILES 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 64,256
pack
echo "done t=$(el)"
