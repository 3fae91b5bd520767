#!/usr/bin/env python3
"""`moe run --tp N` and `moe logits --tp N` on generated tiny checkpoints (simulated ranks on the cpu backend):
greedy tokens at TP 2 and 4 (and with --moe-parallel ep) equal TP 1 for bf16; logits match TP 1 within fp32 noise
(rel L2 <= 1e-5); a TP the heads do not divide exits 2 with a message naming num_attention_heads."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file


def run(moe, model, *extra):
    r = subprocess.run([moe, "run", "--model", model, "--prompt-tokens", "5,6,7,8", "--max-tokens", "16",
                        "--ignore-eos", "--quiet", *extra], capture_output=True, text=True, check=True)
    return [int(t) for t in r.stdout.strip().split(",") if t]


def logits(moe, model, out, *extra):
    subprocess.run([moe, "logits", "--model", model, "--tokens", "3,1,4,1,5,9,2,6,5,3,5", "--out", out, "--quiet",
                    *extra], check=True)
    return load_file(out)["logits"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        # tiny: 4 heads, 2 kv heads (TP 4 replicates each kv head on 2 ranks), moe_intermediate 64 (32 / 16 rows per
        # rank, padded to 64), a dense layer with intermediate 128.
        subprocess.run([args.moe, "gen-model", "--out", model, "--shape", "tiny", "--seed", "9", "--quiet"],
                       check=True)
        want = run(args.moe, model)
        base = logits(args.moe, model, os.path.join(tmp, "tp1.safetensors"))
        for extra in (["--tp", "2"], ["--tp", "4"], ["--tp", "2", "--moe-parallel", "ep"],
                      ["--tp", "4", "--moe-parallel", "ep"]):
            got = run(args.moe, model, *extra)
            if got != want:
                failures.append(f"run {' '.join(extra)}: {got} != TP 1 {want}")
            lg = logits(args.moe, model, os.path.join(tmp, "tpn.safetensors"), *extra)
            err = float(np.linalg.norm(lg - base) / np.linalg.norm(base))
            print(f"{' '.join(extra)}: greedy {'equal' if got == want else 'DIFFERENT'}, logits rel_l2 {err:.3g}")
            if not err <= 1e-5:
                failures.append(f"logits {' '.join(extra)}: rel_l2 {err:.3g} > 1e-5")
        r = subprocess.run([args.moe, "logits", "--model", model, "--tokens", "1,2", "--out",
                            os.path.join(tmp, "x.safetensors"), "--tp", "3", "--quiet"], capture_output=True, text=True)
        if r.returncode != 2 or "num_attention_heads (4) is not divisible by TP 3" not in r.stderr:
            failures.append(f"--tp 3: exit {r.returncode}, stderr {r.stderr.strip()!r}")
        r = subprocess.run([args.moe, "run", "--model", model, "--prompt-tokens", "1", "--moe-parallel", "xx",
                            "--quiet"], capture_output=True, text=True)
        if r.returncode != 2 or "--moe-parallel" not in r.stderr:
            failures.append(f"--moe-parallel xx: exit {r.returncode}, stderr {r.stderr.strip()!r}")
        r = subprocess.run([args.moe, "run", "--model", model, "--prompt-tokens", "1", "--tp", "2", "--tp-comm", "xx",
                            "--quiet"], capture_output=True, text=True)
        if r.returncode != 2 or "--tp-comm 'xx': unknown" not in r.stderr:
            failures.append(f"--tp-comm xx: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    for f in failures:
        print("FAIL:", f)
    print(f"greedy tokens TP 1: {want}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
