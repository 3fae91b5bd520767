#!/usr/bin/env python3
"""`moe run` on a generated tiny model: greedy and seeded sampling repeat exactly, seeds differ, eos stops."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(moe, model, *extra):
    r = subprocess.run([moe, "run", "--model", model, "--prompt-tokens", "5,6,7,8", "--quiet", *extra],
                       capture_output=True, text=True, check=True)
    return [int(t) for t in r.stdout.strip().split(",") if t]


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
        print("greedy", greedy, "sampled", s1, s2)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
