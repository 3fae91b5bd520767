#!/usr/bin/env bash
# Session 29, eighth call: gpu-check of branch next/s29-groups (carry .carry/s29h-gpu.tar.xz, b365f3d), whose
# seventh call passed the DeepSeek shape's GPU tests and measured DeepSeek-V3 TP8 fp8 M=1 37.9 against 40.2 us.
set -uo pipefail
export END=${END:-215}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29h-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 3
grep -E "^deepseek-v3 " $R/gc/bench.log | head -2
pack
echo "done t=$(el)"
