#!/usr/bin/env python3
"""Every way a case file can be unusable makes `moe check` exit 2 with a message naming the tensor or key.

Generates valid cases with `moe gen-case`, then writes one mutated copy per defect (with the `safetensors`
package): each tensor missing, each tensor with a wrong dtype, each tensor with a wrong shape, each metadata
key missing or holding an unknown value. Optional tensors (expected.topk_*, shared_expert_gate.weight,
router.bias) may be missing; everything else may not.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

OPTIONAL = {"expected.topk_ids", "expected.topk_weights", "shared_expert_gate.weight", "router.bias"}
# A wrong dtype of the same element size, so the file itself stays valid.
OTHER_DTYPE = {"F32": "int32", "I32": "float32", "BF16": "float16", "F8_E4M3": "uint8", "U8": "int8",
               "F16": "bfloat16"}
PKG_DTYPE = {"F32": "float32", "I32": "int32", "BF16": "bfloat16", "F16": "float16", "F8_E4M3": "float8_e4m3fn",
             "U8": "uint8", "I8": "int8"}


def read_case(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        tensors[name] = {"dtype": PKG_DTYPE[e["dtype"]], "shape": list(e["shape"]),
                         "data": np.frombuffer(data[b:end], dtype=np.uint8).copy()}
    return meta, tensors


def write_case(path, meta, tensors):
    specs = {name: TensorSpec(dtype=t["dtype"], shape=t["shape"], data_ptr=t["data"].ctypes.data,
                              data_len=t["data"].nbytes) for name, t in tensors.items()}
    serialize_file(specs, path, metadata=meta)


class Runner:
    def __init__(self, moe, work):
        self.moe, self.work, self.failures, self.count = moe, work, [], 0

    def expect(self, label, meta, tensors, must_name, code=2):
        path = os.path.join(self.work, "mutated.safetensors")
        write_case(path, meta, tensors)
        r = subprocess.run([self.moe, "check", "--case", path], capture_output=True, text=True, timeout=120)
        self.count += 1
        msg = (r.stderr + r.stdout).strip().replace("\n", " | ")
        codes = code if isinstance(code, tuple) else (code,)
        if r.returncode not in codes or (must_name and must_name not in msg):
            self.failures.append(f"{label}: exit {r.returncode} (want {code}), message does not name "
                                 f"'{must_name}': {msg}")
        elif os.environ.get("VERBOSE"):
            print(f"ok  {label}: {msg}")


def mutate_all(run, case_name, meta, tensors):
    for name in sorted(tensors):
        t = {k: dict(v) for k, v in tensors.items()}
        del t[name]
        if name in OPTIONAL:
            # Still a usable file (exit 0, or 1 where the expected output assumed the tensor), never exit 2.
            run.expect(f"{case_name}: without optional {name}", meta, t, None, code=(0, 1))
        else:
            run.expect(f"{case_name}: missing {name}", meta, t, name)

        t = {k: dict(v) for k, v in tensors.items()}
        t[name]["dtype"] = OTHER_DTYPE[next(k for k, v in PKG_DTYPE.items() if v == tensors[name]["dtype"])]
        run.expect(f"{case_name}: {name} with dtype {t[name]['dtype']}", meta, t, name)

        shape = tensors[name]["shape"]
        t = {k: dict(v) for k, v in tensors.items()}
        t[name]["shape"] = [int(np.prod(shape))] if len(shape) > 1 else [1] + shape
        run.expect(f"{case_name}: {name} reshaped to {t[name]['shape']}", meta, t, name)

        # Consistent-looking but wrong: one fewer element along the last axis (weights only; for x / logits the
        # first inconsistency found may be another tensor's).
        if name.startswith(("experts.", "shared_expert.")) and shape[-1] > 1:
            t = {k: dict(v) for k, v in tensors.items()}
            new_shape = shape[:-1] + [shape[-1] - 1]
            per_row = tensors[name]["data"].nbytes // int(np.prod(shape))
            t[name]["shape"] = new_shape
            t[name]["data"] = tensors[name]["data"][:int(np.prod(new_shape)) * per_row].copy()
            run.expect(f"{case_name}: {name} shape {new_shape}", meta, t, name)

    for key in sorted(meta):
        if key in ("moe.layout", "moe.act_quant", "moe.renormalize", "moe.n_group", "moe.topk_group",
                   "moe.routed_scaling_factor"):
            pass  # optional keys with defaults; a bad value is still an error, checked below
        else:
            m = dict(meta)
            del m[key]
            run.expect(f"{case_name}: metadata without {key}", m, tensors, key)
        m = dict(meta)
        m[key] = "bogus"
        run.expect(f"{case_name}: {key}=bogus", m, tensors, key)
    for key, value in (("moe.top_k", "999"), ("moe.top_k", "0"), ("moe.tolerance", "-1"), ("moe.tolerance", "nan")):
        m = dict(meta)
        m[key] = value
        run.expect(f"{case_name}: {key}={value}", m, tensors, key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    run = Runner(args.moe, args.work)
    cases = {
        "fp8_shared_grouped": ["--format", "fp8_block", "--router", "sigmoid_grouped", "--n-group", "2",
                               "--topk-group", "1", "--M", "3", "--E", "4", "--H", "160", "--I", "96", "--top-k",
                               "2", "--shared-inter", "64"],
        "mxfp4_hf": ["--format", "mxfp4", "--M", "2", "--E", "4", "--H", "64", "--I", "64", "--top-k", "2"],
        "gpt_oss": ["--format", "mxfp4", "--layout", "gpt_oss", "--activation", "swiglu_oai", "--router",
                    "topk_softmax", "--M", "2", "--E", "4", "--H", "64", "--I", "64", "--top-k", "2"],
        "bf16": ["--format", "bf16", "--M", "2", "--E", "4", "--H", "64", "--I", "32", "--top-k", "2"],
    }
    for name, opts in cases.items():
        path = os.path.join(args.work, f"{name}.safetensors")
        subprocess.run([args.moe, "gen-case", "--out", path, *opts], check=True, capture_output=True)
        meta, tensors = read_case(path)
        run.expect(f"{name}: unmodified", meta, tensors, "PASS", code=0)
        mutate_all(run, name, meta, tensors)
    # A valid value that does not fit the tensors: fp8 tensors labelled mxfp4.
    meta, tensors = read_case(os.path.join(args.work, "fp8_shared_grouped.safetensors"))
    run.expect("fp8 file labelled mxfp4", dict(meta, **{"moe.format": "mxfp4"}), tensors, "experts.")
    for f in run.failures:
        print("FAIL", f)
    print(f"case_errors: {run.count - len(run.failures)}/{run.count} mutations refused as required")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
