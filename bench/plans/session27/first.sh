#!/usr/bin/env bash
# Session 27, first call: main at 7d9d9ae (session 26 put the wgmma grouped GEMM's item loads ahead, h by sorted
# position and the uniform column scales on by default; measured on an H100 only).
#  1. gpu-check (tests with poisoned memory, cases, fixtures, benchmarks; no TP CLI, no experiments) at main: on
#     an H200 this gives the targets table its first figures since session 23; the grouped GEMM rows test has
#     two rows no GPU has run (all three switches together; the second warpgroup three K steps behind);
#  2. the A/B session 26 left: all three on against each one off (the item loads ahead were slower alone and
#     the combination without them was never measured), fp8 and bf16, two rounds, with DeepSeek-V3 full bf16
#     M=4096 (4.4 % slower with the switches on in session 26: which one?);
#  3. the cycle accounting at the defaults (M=4096 fp8 and bf16).
# Carry: .carry/main-7d9d9ae-gpu.tar.xz (scripts/pack-gpu-carry build at 7d9d9ae) and
# .carry/cycles-7d9d9ae.tar.xz (bin/moe with expert_wgmma.cu compiled with -DMOE_WGMMA_CYCLES and relinked).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/main-7d9d9ae-gpu.tar.xz /tmp/n
mkdir -p /tmp/c && tar -C /tmp/c -xJf .carry/cycles-7d9d9ae.tar.xz
record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 200  # (200 s kept for the A/B and the cycles)
grep -E "(all three|skewed).*M=400 " $R/gc/gpu-tests.log | head -8
pack
for round in 1 2; do
  for off in none MOE_WGMMA_AHEAD=0 MOE_WGMMA_H_BY_POSITION=0 MOE_WGMMA_UNIFORM_SCALES=0; do
    [ "$(el)" -gt $((END - 60)) ] && break
    env ${off/none/MOE_NONE=0} timeout 40 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 \
      --formats fp8_block,bf16 --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round off=$off /"
    [ "$off" = MOE_WGMMA_UNIFORM_SCALES=0 ] && continue  # (fp8 only: no bf16 row below)
    env ${off/none/MOE_NONE=0} timeout 40 /tmp/n/bin/moe bench --shapes deepseek-v3 --formats bf16 --M 4096 2>&1 |
      grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round off=$off /"
  done
done > $R/switches-ab.log
cat $R/switches-ab.log
echo "a/b t=$(el)"
pack
for fmt in fp8_block bf16; do
  [ "$(el)" -gt $((END - 25)) ] && break
  timeout 20 /tmp/c/bin/moe bench --shapes qwen3-30b-a3b --formats $fmt --M 4096 > "$R/cycles-$fmt.log" 2>&1
  echo "cycles $fmt rc $? t=$(el)"
  grep -E "^qwen|stage [12]" "$R/cycles-$fmt.log" | cut -c1-300
  pack
done
echo "done t=$(el)"
