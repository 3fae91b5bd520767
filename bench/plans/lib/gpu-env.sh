#!/usr/bin/env bash
# Sourced by plan scripts on a lent GPU machine (from the repository root; session 19 on), so each does not
# repeat it:
#   unpack_carry TARBALL DIR   unpacks a scripts/pack-gpu-carry archive into DIR (DIR/bin, DIR/lib) and puts
#                              its libraries and the machine's cuBLAS on LD_LIBRARY_PATH
#   record_gpu FILE            writes the card's name (what scripts/ingest-gpu-results files the results by)
unpack_carry() {
  mkdir -p "$2" && tar -C "$2" -xJf "$1" || return 1
  local cublas
  cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
  export LD_LIBRARY_PATH="$2/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}"
}
record_gpu() {
  nvidia-smi --query-gpu=name --format=csv,noheader | tee "$1"
}
