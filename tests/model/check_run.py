#!/usr/bin/env python3
"""`moe run` on a generated tiny model: greedy and seeded sampling repeat exactly, seeds differ, eos stops;
--logits-out writes the logits each token was sampled from (greedy: their argmax is the token; each decode
step's row matches the last row of one prefill of the same prefix)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file


def run(moe, model, *extra):
    r = subprocess.run([moe, "run", "--model", model, "--prompt-tokens", "5,6,7,8", "--quiet", *extra],
                       capture_output=True, text=True, check=True)
    return [int(t) for t in r.stdout.strip().split(",") if t]


def check_logits_out(moe, model, tmp):
    out = os.path.join(tmp, "run-logits.st")
    toks = run(moe, model, "--max-tokens", "6", "--ignore-eos", "--logits-out", out)
    f = load_file(out)
    logits, ids = f["logits"], f["output_ids"]
    bad = []
    if logits.shape[0] != 6 or list(ids) != toks or list(logits.argmax(-1)) != toks:
        bad.append(f"--logits-out: shape {logits.shape}, ids {list(ids)}, argmax {list(logits.argmax(-1))}, "
                   f"tokens {toks}")
        return bad
    for k in (0, 3, 5):
        prefix = ",".join(str(t) for t in [5, 6, 7, 8] + toks[:k])
        p = os.path.join(tmp, f"prefill-{k}.st")
        subprocess.run([moe, "logits", "--model", model, "--tokens", prefix, "--out", p, "--quiet"], check=True)
        want = load_file(p)["logits"][-1]
        err = float(np.linalg.norm(logits[k] - want) / np.linalg.norm(want))
        if not err <= 1e-5:
            bad.append(f"--logits-out row {k} against a prefill of its prefix: rel L2 {err:.2e} (bound 1e-5)")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        subprocess.run([args.moe, "gen-model", "--out", model, "--shape", "tiny", "--seed", "7", "--quiet"], check=True)
        greedy = run(args.moe, model, "--max-tokens", "12", "--ignore-eos")
        if len(greedy) != 12 or greedy != run(args.moe, model, "--max-tokens", "12", "--ignore-eos"):
            failures.append(f"greedy not repeatable or wrong length: {greedy}")
        s1 = run(args.moe, model, "--max-tokens", "12", "--temperature", "1.5", "--seed", "11", "--ignore-eos")
        s1b = run(args.moe, model, "--max-tokens", "12", "--temperature", "1.5", "--seed", "11", "--ignore-eos")
        s2 = run(args.moe, model, "--max-tokens", "12", "--temperature", "1.5", "--seed", "12", "--ignore-eos")
        if s1 != s1b:
            failures.append(f"seed 11 gave {s1} then {s1b}")
        if s1 == s2:
            failures.append(f"seeds 11 and 12 gave the same tokens {s1}")
        # Make the 3rd greedy token an eos id: generation must stop right there.
        cfg_path = os.path.join(model, "config.json")
        cfg = json.load(open(cfg_path))
        cfg["eos_token_id"] = [greedy[2]]
        json.dump(cfg, open(cfg_path, "w"))
        stopped = run(args.moe, model, "--max-tokens", "12")
        if stopped != greedy[: greedy.index(greedy[2]) + 1]:
            failures.append(f"eos {greedy[2]}: expected {greedy[:3]}, got {stopped}")
        failures += check_logits_out(args.moe, model, tmp)
        print("greedy", greedy, "sampled", s1, s2)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
