#!/usr/bin/env python3
"""Compares `moe logits` with golden logits: relative L2 over all logits <= tol and 100 % top-1 agreement.

Modes:
  --numpy-variant V   build the checkpoint + golden with make_numpy_golden.py into a temp dir, then compare
  --fixtures DIR      every subdir of DIR holding golden.safetensors (written by scripts/gen-fixtures with HF
                      transformers); exits 77 (skipped) with a message when there are none
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))


def compare(moe, model_dir, golden_path, tol, workdir):
    golden = load_file(golden_path)
    ids = golden["input_ids"].astype(np.int64)
    out = os.path.join(workdir, "logits.safetensors")
    cmd = [moe, "logits", "--model", model_dir, "--tokens", ",".join(map(str, ids)), "--out", out, "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {model_dir}: moe logits exited {r.returncode}: {r.stderr.strip()}")
        return False
    got = load_file(out)
    ref = golden["logits"].astype(np.float64)
    lg = got["logits"].astype(np.float64)
    if lg.shape != ref.shape or not np.array_equal(got["input_ids"], golden["input_ids"]):
        print(f"FAIL {model_dir}: shape {lg.shape} vs golden {ref.shape} or input_ids differ")
        return False
    rel = np.linalg.norm(lg - ref) / np.linalg.norm(ref)
    top1 = float(np.mean(lg.argmax(-1) == ref.argmax(-1)))
    ok = bool(np.isfinite(rel)) and rel <= tol and top1 == 1.0
    print(f"{'PASS' if ok else 'FAIL'} {os.path.basename(model_dir.rstrip('/'))}: rel_l2={rel:.3e} (tol {tol:g}) "
          f"top1={top1 * 100:.1f}% max_abs={np.abs(lg - ref).max():.3e} T={ref.shape[0]} V={ref.shape[1]}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", required=True)
    ap.add_argument("--numpy-variant")
    ap.add_argument("--fixtures")
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.numpy_variant:
            model = os.path.join(tmp, "model")
            subprocess.run([sys.executable, os.path.join(HERE, "make_numpy_golden.py"), "--out", model, "--variant",
                            args.numpy_variant], check=True, stdout=subprocess.DEVNULL)
            return 0 if compare(args.moe, model, os.path.join(model, "golden.safetensors"), args.tol, tmp) else 1
        dirs = []
        if args.fixtures and os.path.isdir(args.fixtures):
            dirs = sorted(os.path.join(args.fixtures, d) for d in os.listdir(args.fixtures)
                          if os.path.isfile(os.path.join(args.fixtures, d, "golden.safetensors")))
        if not dirs:
            print(f"SKIP: no transformers fixtures under {args.fixtures} (run scripts/gen-fixtures {args.fixtures} "
                  "on a machine with torch + transformers and commit the result)")
            return 77
        ok = all([compare(args.moe, d, os.path.join(d, "golden.safetensors"), args.tol, tmp) for d in dirs])
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
