#!/usr/bin/env bash
# Runs the safetensors/case-file fuzzer for a bounded time on a seed corpus of real case files made by
# `moe gen-case`. Usage: run_fuzz.sh FUZZER MOE WORKDIR SECONDS. Fails on any crash or sanitizer report.
set -euo pipefail
fuzzer=$(realpath "$1") moe=$(realpath "$2") work=$3 seconds=${4:-20}
rm -rf "$work"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
gen() { "$moe" gen-case --out "$work/seeds/$1.safetensors" "${@:2}" 2>/dev/null; }
gen bf16 --format bf16 --M 2 --E 4 --H 64 --I 64 --top-k 2
gen fp8 --format fp8_block --M 3 --E 4 --H 160 --I 96 --top-k 2 --shared-inter 64
gen mxfp4 --format mxfp4 --M 2 --E 4 --H 64 --I 64 --top-k 1
gen gptoss --format mxfp4 --layout gpt_oss --activation swiglu_oai --router topk_softmax --M 2 --E 4 --H 64 --I 64 --top-k 2
gen ds --format bf16 --router sigmoid_grouped --n-group 2 --topk-group 1 --scaling 2.5 --M 2 --E 4 --H 64 --I 32 \
  --top-k 2 --shared-inter 32 --no-shared-gate
# A dictionary of the tokens the parser and the case loader look for helps the mutator reach deeper code.
cat >"$work/dict" <<'DICT'
"__metadata__"
"dtype"
"shape"
"data_offsets"
"F32"
"BF16"
"F8_E4M3"
"U8"
"I32"
"moe.format"
"moe.layout"
"moe.router"
"moe.act_quant"
"moe.top_k"
"fp8_block"
"mxfp4"
"gpt_oss"
"sigmoid_grouped"
"experts.gate_proj.weight"
"shared_expert.gate_proj.weight"
"router.bias"
DICT
cd "$work"
"$fuzzer" corpus seeds -dict=dict -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix=artifacts/ -print_final_stats=1 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ] || [ -n "$(ls -A artifacts)" ]; then
  echo "fuzz_safetensors: FAILED (exit $status); reproducers in $work/artifacts"
  exit 1
fi
echo "fuzz_safetensors: clean"
