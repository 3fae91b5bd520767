#!/usr/bin/env bash
# Session 18's attention race fix (dc5e4aa) on the GPU: racecheck over decode steps, the model tests, the fixtures.
# Carry: .carry/s18c-gpu.tar.xz (scripts/pack-gpu-carry at dc5e4aa or later), this script as .carry/race18.sh.
set -uo pipefail
R=/tmp/r6; mkdir -p $R
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s18c-gpu.tar.xz /tmp/n
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
record_gpu $R/gpu.txt
timeout 130 $CS --tool racecheck --print-limit 20 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
  --format fp8_block --layers 2 --batches 1,8 --context 1024 --prefill 0 --reps 1 > $R/racecheck.log 2>&1
echo "racecheck rc $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|Race reported" $R/racecheck.log | head -8
timeout 150 /tmp/n/bin/cuda_model_test --gtest_color=no > $R/cuda_model_test.log 2>&1; echo "cuda_model_test rc $?"
grep -E "^\[  (PASSED|FAILED)" $R/cuda_model_test.log | head
timeout 100 python3 scripts/check-fixtures /tmp/n/bin/moe --backend cuda > $R/fixtures.log 2>&1; echo "fixtures rc $?"; tail -3 $R/fixtures.log
timeout 60 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 | grep -E "^decode" | tee $R/model.log
tar -C /tmp -czf $OUT/r6.tgz r6
