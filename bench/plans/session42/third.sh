#!/usr/bin/env bash
# Session 42's third plan (carries as the second's: .carry/s42b.tar.xz, .carry/s42b-cycles.tar.xz). The second
# call had stage 2 per tile (MOE_WGMMA_TILE_READY=1) faster on every shape and M from 64 tokens (Qwen3-30B-A3B
# fp8 M=64 -3.6 %, M=128 -3.9 %) and level below, except DeepSeek-V3 full fp8 M=256: 2689 -> 2819 us (+4.8 %).
# Where that comes from: off / on at 128-768 tokens there, with the swapped stage 1's prefetch off too, and the
# swapped kernel's cycles a step off and on at 256; Qwen3-30B-A3B past 256 (512, 768).
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s42b.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s42b-cycles.tar.xz}" || echo "no cycles build"
bench_ab $R/ds-ab.log MOE_WGMMA_TILE_READY 0,1 $B/moe --shapes deepseek-v3 --formats fp8_block --M 128,256,384,768
pack
(export MOE_WGMMA_PREFETCH_STEPS=0 && bench_ab $R/ds-noprefetch-ab.log MOE_WGMMA_TILE_READY 0,1 $B/moe \
  --shapes deepseek-v3 --formats fp8_block --M 256)
pack
bench_ab $R/qwen-big-ab.log MOE_WGMMA_TILE_READY 0,1 $B/moe --shapes qwen3-30b-a3b,qwen3-next-80b-a3b \
  --formats fp8_block --M 512,768
pack
wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TILE_READY "0 1" 256 deepseek-v3
echo "done t=$(el)"
