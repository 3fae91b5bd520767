#!/usr/bin/env bash
# Session 41's second plan (carry $CARRY, default .carry/s41d.tar.xz, built from branch next/s41-h-box: main with
# MOE_WGMMA_SWAP_H_BOX, off by default, and its MOE_KERNEL_TIMELINE measuring build as bin/moe-measuring;
# $CYCLES, default .carry/s41d-cycles.tar.xz: its MOE_WGMMA_CYCLES measuring build as bin/moe-cycles). The swapped kernel's
# fp8 stage 2 with its pair tile and pair scales by tensor map (stage 1 writing h by sorted position): its
# forced-path rows (the same bits as the swapped kernel's other rows, TP phase 64 included), every
# cuda_fused_moe_test (M sweep, poisoned workspaces, ten runs' bits) with it on, then off against on (one
# process, two rounds) at 16-256 tokens and on the other shapes, the copier's and consumers' cycles a step
# off and on at 64 and 256 tokens, and the decode step's kernel timeline at batch 64 off and on (the
# timeline now finds layers that start at attention). On an H200, the quick gpu-check first (the column).
# With PROBE_HBOX2=1 (the third plan): MOE_WGMMA_SWAP_H_BOX=2 once in its own process (the second call's
# form, which faulted at the pair scales' box; 1 now takes them by kN threads' cp.async).
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
res() { echo $(($1 * END / 560)); }  # a step's reserve, scaled for a shorter END
start_plan "${CARRY:-.carry/s41d.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s41d-cycles.tar.xz}" || echo "no cycles build"
grep -q H200 $R/gpu.txt && quick_gpu_check $B "$(res 160)" && pack
grouped_forced_paths 70 "$(res 400)"
echo "h box rows: $(grep -c 'h box.*PASS' $R/forced-paths.log) PASS, $(grep 'h box' $R/forced-paths.log | grep -vc PASS) other"
grep "h box" $R/forced-paths.log | grep -v PASS | head -5
# A fault: where (compute-sanitizer names the kernel and the instruction's offset), then stop.
if grep -qE "^\[  FAILED|exception" $R/forced-paths.log; then
  san=$(find /usr/local/cuda/ /usr/local/cuda-1*/ /opt -name compute-sanitizer -type f 2>/dev/null | head -1)
  env MOE_WGMMA_SWAP_H_BOX=1 timeout "$(cap 120 5)" "${san:-compute-sanitizer}" --print-limit 4 $B/moe bench \
    --shapes qwen3-30b-a3b --formats fp8_block --M 64 > $R/sanitizer.log 2>&1
  echo "sanitizer rc $? ($san)"
  grep -vE "^moe: no tuned" $R/sanitizer.log | head -40
  pack
  exit 0
fi
env MOE_WGMMA_SWAP_H_BOX=1 timeout "$(cap 150 "$(res 330)")" $B/cuda_fused_moe_test --gtest_color=no \
  > $R/fused-moe-hbox.log 2>&1
echo "cuda_fused_moe_test with the h box rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|tests? ran" $R/fused-moe-hbox.log | head -8
pack
if [ "${PROBE_HBOX2:-0}" = 1 ]; then
  env MOE_WGMMA_SWAP_H_BOX=2 timeout "$(cap 40 "$(res 300)")" $B/moe bench --shapes qwen3-30b-a3b --formats fp8_block \
    --M 64 > $R/hbox2-probe.log 2>&1
  echo "h box 2 probe rc $?"
  grep -E "^qwen3|rror" $R/hbox2-probe.log | head -3
fi
clocks_start $R/clocks.log
bench_ab $R/hbox-ab.log MOE_WGMMA_SWAP_H_BOX 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 16,32,64,128,256
pack
# The decode step's kernel timeline at batch 64, the h box off and on (and, with PROBE_HBOX2, with the
# wgmma kernels launched overlapped: does stage 2's launch gap close?)
settings="MOE_WGMMA_SWAP_H_BOX=0 MOE_WGMMA_SWAP_H_BOX=1"
[ "${PROBE_HBOX2:-0}" = 1 ] && settings="$settings MOE_WGMMA_OVERLAPPED=1"
for v in $settings; do
  [ "$(cap 50 5)" -lt 40 ] && break
  env "$v" MOE_KERNEL_TIMELINE=1 timeout "$(cap 50 5)" $B/moe-measuring bench \
    --random-shape qwen3-30b-a3b --format fp8_block --batches 64 --prefill 0 > "$R/timeline-b64-${v//=/-}.log" 2>&1
  echo "timeline batch 64 $v rc $? t=$(el)"
  grep -E "^decode|decode layers" "$R/timeline-b64-${v//=/-}.log"
  grep -A22 -E "^  launch" "$R/timeline-b64-${v//=/-}.log" | head -24
  pack
done
bench_ab $R/hbox-shapes-ab.log MOE_WGMMA_SWAP_H_BOX 0,1 $B/moe \
  --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block --M 16,64,256
clocks_stop
pack
wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_SWAP_H_BOX "0 1" 64,256
echo "done t=$(el)"
