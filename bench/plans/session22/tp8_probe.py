#!/usr/bin/env python3
"""Session 22: where TP 8 --moe-parallel tp leaves TP 1's greedy tokens on the TP check's random
Qwen3-30B-A3B (bf16, 2 layers), with the logits of every decode step (`moe run --logits-out`) beside the fp32
CPU reference's logits on the same token path (one CPU prefill of prompt + generated tokens). If TP 8's
decode logits sit as close to the CPU's as TP 1's do up to the step where they part, the two are equally
right and the check's noise measure (one prefill's last row) is too small; if TP 8's distance jumps at one step
while TP 1's does not, TP 8 computes something else there.

  tp8_probe.py MOE OUT_DIR     (PROBE_BACKEND=cpu PROBE_SHAPE=tiny PROBE_TP=4: a dry run of the script on a CPU)"""
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

PROMPT = [5, 6, 7, 8]
STEPS = 16
BACKEND = os.environ.get("PROBE_BACKEND", "cuda")
SHAPE = os.environ.get("PROBE_SHAPE", "qwen3-30b-a3b")
TP = os.environ.get("PROBE_TP", "8")
HALF = str(int(TP) // 2)


def sh(*cmd, **kw):
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def margin(row):
    top = np.sort(row)[-2:]
    return float(top[1] - top[0])


def main():
    moe, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    d = os.path.join(out, "q30")
    sh(moe, "gen-model", "--out", d, "--shape", SHAPE, "--layers", "2", "--vocab", "4096", "--format",
       "bf16", "--quiet")
    prompt = ",".join(map(str, PROMPT))
    runs = {}
    for name, extra in [("tp1", []), ("tp8tp", ["--tp", TP, "--moe-parallel", "tp", "--tp-comm", "host"]),
                        ("tp8ep", ["--tp", TP, "--moe-parallel", "ep", "--tp-comm", "host"]),
                        ("tp4tp", ["--tp", HALF, "--moe-parallel", "tp", "--tp-comm", "host"])]:
        f = os.path.join(out, f"run-{name}.st")
        sh(moe, "run", "--model", d, "--prompt-tokens", prompt, "--max-tokens", str(STEPS), "--ignore-eos",
           "--backend", BACKEND, "--quiet", "--logits-out", f, *extra, capture_output=True)
        runs[name] = load_file(f)
    cpu = {}
    for name in ("tp1", "tp8tp"):
        toks = ",".join(map(str, PROMPT + [int(t) for t in runs[name]["output_ids"][:-1]]))
        f = os.path.join(out, f"cpu-{name}.st")
        sh(moe, "logits", "--model", d, "--tokens", toks, "--backend", "cpu", "--out", f, "--quiet")
        cpu[name] = load_file(f)["logits"][len(PROMPT) - 1:]
    t1, t8 = runs["tp1"], runs["tp8tp"]
    print("step  tok1  tok8 | max|tp1-cpu| max|tp8-cpu| (each on its own path) | max|tp8-tp1| | margin cpu tp1 "
          f"| TP {TP} ep, TP {HALF} tp same as tp1 (rows named tp8*, tp4* hold TP {TP}, TP {HALF})")
    for s in range(STEPS):
        a, b = t1["logits"][s], t8["logits"][s]
        e1 = float(np.abs(a - cpu["tp1"][s]).max())
        e8 = float(np.abs(b - cpu["tp8tp"][s]).max())
        same = [bool(runs[n]["output_ids"][s] == t1["output_ids"][s]) for n in ("tp8ep", "tp4tp")]
        print(f"{s:4d} {int(t1['output_ids'][s]):5d} {int(t8['output_ids'][s]):5d} | {e1:12.2e} {e8:12.2e} | "
              f"{float(np.abs(a - b).max()):12.2e} | {margin(cpu['tp1'][s]):8.4f} {margin(a):8.4f} | {same}")
    print("logit scale (max |logit| at step 0):", float(np.abs(t1["logits"][0]).max()))
    sh("rm", "-rf", d)


if __name__ == "__main__":
    main()
