#!/usr/bin/env bash
# The scripts that a lent GPU machine runs (gpu-check, the packers, the profilers, the next sessions' plans)
# parse: a syntax error found there costs device time that this CPU check saves. Bash scripts by `bash -n`,
# Python ones by Python's parser.
set -uo pipefail
ROOT=${1:?the source tree}
checked=0 failed=0
for f in "$ROOT"/scripts/* "$ROOT"/bench/plans/*/*.sh; do
  [ -f "$f" ] || continue
  first=$(head -1 "$f")
  if [[ "$first" == *python* ]]; then
    python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f"
  elif [[ "$first" == *sh* || "$f" == *.sh ]]; then
    bash -n "$f"
  else
    continue
  fi
  if [ $? -ne 0 ]; then
    echo "FAIL: $f does not parse"
    failed=$((failed + 1))
  fi
  checked=$((checked + 1))
done
echo "scripts_parse: $checked scripts checked, $failed failed"
[ "$checked" -ge 10 ] || { echo "FAIL: expected at least 10 scripts under $ROOT/scripts and bench/plans"; exit 1; }
[ "$failed" -eq 0 ]
