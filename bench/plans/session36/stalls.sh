#!/usr/bin/env bash
# Session 36's last, short plan: where Auto's one-token swap-AB stages stall with the caches kept
# (NCU_CACHE_CONTROL=none) against ncu's default flush (all): the icache probe found first-time code costs an
# idle SM 40-60 ns per KB and costs nothing beside a weight stream, and stage 2's code after its wait runs
# on SMs that stage 1 has left. Carry: .carry/gpu.tar.xz (main's binaries).
set -uo pipefail
export END=${END:-140}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/gpu.tar.xz /tmp/carry
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
args="bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 --copies 2"
# swap_ab_kernel launches alternate stage 1, stage 2: an odd skip lands on a stage 2.
for run in "21 none" "21 all" "20 none"; do
  set -- $run
  [ "$(cap 25 0)" -lt 25 ] && break
  mkdir -p $R/s$1-$2
  BENCH_ARGS="$args" NCU_SKIP=$1 NCU_SAMPLING=0 NCU_CACHE_CONTROL=$2 OUT=$R/s$1-$2 timeout "$(cap 50 0)" \
    scripts/profile-stalls swap_ab_kernel /tmp/carry/bin/moe > $R/s$1-$2/run.log 2>&1
  echo "skip $1 cache $2 rc $? t=$(el)"
  grep -E "Duration|Warp Cycles Per Issued|No Instruction|Stall Wait|Stall Barrier|Long Scoreboard|Grid Size" \
    $R/s$1-$2/stalls-*-details.txt 2>/dev/null | head -8
  rm -f $R/*/*.ncu-rep
  pack
done
echo "done t=$(el)"
