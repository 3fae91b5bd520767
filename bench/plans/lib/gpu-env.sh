#!/usr/bin/env bash
# Sourced by plan scripts on a lent GPU machine (from the repository root; session 19 on), so each does not
# repeat it:
#   unpack_carry TARBALL DIR   unpacks a scripts/pack-gpu-carry archive into DIR (DIR/bin, DIR/lib) and puts
#                              its libraries and the machine's cuBLAS on LD_LIBRARY_PATH
#   record_gpu FILE            writes the card's name (what scripts/ingest-gpu-results files the results by)
#   decode_ab MOE LOG VAR V..  the model's decode step (random Qwen3-30B-A3B fp8, batches 1 and 8) with VAR set
#                              to each value in turn (list them alternated), its rows into LOG
#   timeline MOE LOG [VAR=V..] the measuring build MOE's kernel timeline at batch 1 into LOG; prints its table
unpack_carry() {
  mkdir -p "$2" && tar -C "$2" -xJf "$1" || return 1
  local cublas
  cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
  export LD_LIBRARY_PATH="$2/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}"
}
record_gpu() {
  nvidia-smi --query-gpu=name --format=csv,noheader | tee "$1"
}
decode_ab() {
  local moe=$1 log=$2 var=$3 v
  shift 3
  for v in "$@"; do
    env "$var=$v" timeout 40 "$moe" bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/$var=$v /"
  done > "$log"
  cat "$log"
}
timeline() {
  local moe=$1 log=$2
  shift 2
  env MOE_KERNEL_TIMELINE=1 "$@" timeout 45 "$moe" bench --random-shape qwen3-30b-a3b --format fp8_block \
    --batches 1 --prefill 0 > "$log" 2>&1
  echo "timeline $* rc $?"
  grep -iE "error|illegal" "$log" | head -3
  grep -A16 -iE "^  launch" "$log" | head -20
}
