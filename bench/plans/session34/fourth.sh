#!/usr/bin/env bash
# Session 34, fourth call (little device time left): the queue-latency probe alone, and on an H200 the read
# sweep. Carry: .carry/queue_latency_probe, .carry/s34a-gpu.tar.xz (main at ccb6c58).
set -uo pipefail
export END=${END:-150}
source bench/plans/lib/gpu-env.sh
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
timeout 90 .carry/queue_latency_probe > $R/queue-latency.log 2>&1
echo "probe rc $?"
cat $R/queue-latency.log
pack
if grep -q H200 $R/gpu.txt; then
  unpack_carry .carry/s34a-gpu.tar.xz /tmp/n
  timeout "$(cap 40 5)" /tmp/n/bin/moe bench --read-sweep > $R/read-sweep.log 2>&1
  echo "read sweep rc $?"
  grep -v "^read sweep" $R/read-sweep.log | tail -40
  pack
fi
echo "done t=$(el)"
