#!/usr/bin/env bash
# Session 42's fourth plan (carries .carry/s42c.tar.xz, .carry/s42c-cycles.tar.xz: branch next/s42-tile-ready,
# stage 1's arrival on a tile's count deferred past the warp's next run's K steps). The second call had stage 2
# per tile faster from 64 tokens on every shape but DeepSeek-V3 full M=256 (+4.8 %), and the cycles on
# DeepSeek-V3 TP8 had stage 1's consumers ~50 cycles a step slower (the release right after the h stores).
# Off / on (one process, two rounds) on every shape; the cycles on DeepSeek-V3 full at 256;
# whether on loses nowhere (no row more than 0.5 % slower, some row at least 1 % faster); the quick gpu-check
# with it on (MOE_WGMMA_TILE_READY=1 exported: what its default would be).
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s42c.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s42c-cycles.tar.xz}" || echo "no cycles build"
clocks_start $R/clocks.log
every_shape_ab $R/tr-ab.log MOE_WGMMA_TILE_READY 0,1
clocks_stop
pack
grouped_forced_paths 60 "$(cap 300)"
echo "tile ready rows: $(grep -E 'tile ready' $R/forced-paths.log | grep -cE 'PASS|equal') PASS"
stop_on_fault MOE_WGMMA_TILE_READY=1 && exit 0
# On where it loses nowhere: every shape, format and M with on's mean at most 0.5 % above off's, one 1 % below.
winner=$(loses_nowhere $R/tr-ab.log MOE_WGMMA_TILE_READY)
echo "tile ready winner: $winner"
[ "${CYCLES_M256:-1}" = 1 ] && wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TILE_READY "0 1" 256 deepseek-v3
# The gpu-check with it on either way: its GPU tests then run every path with stage 2 per tile.
export MOE_WGMMA_TILE_READY=1
echo "quick gpu-check with MOE_WGMMA_TILE_READY=$MOE_WGMMA_TILE_READY"
if [ "$(cap 330 5)" -ge 200 ]; then quick_gpu_check $B 5; else echo "no time left for the gpu-check"; fi
pack
echo "done t=$(el)"
