#!/usr/bin/env bash
# Session 43's third call (carry .carry/s43c.tar.xz: next/s43-take-runs with the defaults set: stage 2 per
# tile on (MOE_WGMMA_TILE_READY=1), taking its runs from 8 K steps (MOE_WGMMA_TAKE_RUNS=8)). Off / the
# defaults on every shape; whether the defaults lose nowhere.
set -uo pipefail
export END=${END:-200}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s43c.tar.xz}" || exit 1
clocks_start $R/clocks.log
every_shape_ab $R/tr-ab.log MOE_WGMMA_TILE_READY 0,1
clocks_stop
pack
echo "tile ready winner: $(loses_nowhere $R/tr-ab.log MOE_WGMMA_TILE_READY)"
echo "done t=$(el)"
