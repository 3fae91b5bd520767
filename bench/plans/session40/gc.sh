#!/usr/bin/env bash
# Session 40's second plan: the H200 column of docs/performance.md (scripts/gpu-check's quick form: every GPU
# test with poisoned memory, Auto's tables, DeepSeek-V3, the model's decode step) on branch
# next/s39-overlapped's binaries, with the switches first.sh measured faster passed in the environment (e.g.
# MOE_WGMMA_OVERLAPPED=1 MOE_WGMMA_SWAP_AHEAD=1 END=560 bash bench/plans/session40/gc.sh): gpu-check reads
# the same switches. Carry: .carry/s39f.tar.xz.
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s39f.tar.xz || exit 1
env | grep -E "^MOE_" | sort > $R/switches.txt
cat $R/switches.txt
quick_gpu_check $B "${GC_RESERVE:-30}"
grep -E "(ahead|overlapped) fp8_block\] M=400 |DIFFER" $R/gc/gpu-tests.log | head -6
pack
echo "done t=$(el)"
