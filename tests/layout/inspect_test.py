#!/usr/bin/env python3
"""`moe inspect` on generated checkpoint directories: a correct fp8 Qwen-style checkpoint (one MoE layer with a
gated shared expert, one dense layer) is described and validated at several TP degrees; a mis-shaped or missing
tensor exits 2 naming it; a TP the plan refuses exits 2 saying why."""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

H, I, E, IS = 256, 512, 4, 256


def write_checkpoint(path, override=None, drop=None):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": 1000,
              "hidden_size": H, "num_hidden_layers": 2, "num_attention_heads": 2, "num_experts": E,
              "num_experts_per_tok": 2, "moe_intermediate_size": I, "shared_expert_intermediate_size": IS,
              "mlp_only_layers": [1], "intermediate_size": 512,
              "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}}
    json.dump(config, open(os.path.join(path, "config.json"), "w"))
    rng = np.random.default_rng(3)
    tensors = {}

    def linear(prefix, rows, cols):
        tensors[prefix + ".weight"] = ("float8_e4m3fn", rng.integers(0, 0x7E, (rows, cols), dtype=np.uint8))
        tensors[prefix + ".weight_scale_inv"] = (
            "float32", (rng.random((-(-rows // 128), -(-cols // 128))) * 1e-3 + 1e-4).astype(np.float32))

    mlp = "model.layers.0.mlp"
    for e in range(E):
        linear(f"{mlp}.experts.{e}.gate_proj", I, H)
        linear(f"{mlp}.experts.{e}.up_proj", I, H)
        linear(f"{mlp}.experts.{e}.down_proj", H, I)
    linear(f"{mlp}.shared_expert.gate_proj", IS, H)
    linear(f"{mlp}.shared_expert.up_proj", IS, H)
    linear(f"{mlp}.shared_expert.down_proj", H, IS)
    tensors[f"{mlp}.shared_expert_gate.weight"] = ("float32", rng.standard_normal((1, H)).astype(np.float32))
    tensors[f"{mlp}.gate.weight"] = ("float32", rng.standard_normal((E, H)).astype(np.float32))
    for name, shape in (override or {}).items():
        dtype, arr = tensors[name]
        tensors[name] = (dtype, np.resize(arr, shape))
    for name in drop or []:
        del tensors[name]
    # Two shards with an index, as real checkpoints come.
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for fname, group in shards.items():
        arrays = {n: np.ascontiguousarray(tensors[n][1]) for n in group}
        specs = {n: TensorSpec(dtype=tensors[n][0], shape=list(arrays[n].shape), data_ptr=arrays[n].ctypes.data,
                               data_len=arrays[n].nbytes) for n in group}
        serialize_file(specs, os.path.join(path, fname))
        weight_map.update({n: fname for n in group})
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(path, "model.safetensors.index.json"), "w"))


class Checker:
    def __init__(self, moe):
        self.moe, self.failures = moe, []

    def run(self, label, model, tp, code, must_have):
        r = subprocess.run([self.moe, "inspect", "--model", model, "--tp", str(tp)], capture_output=True, text=True,
                           timeout=120)
        text = r.stdout + r.stderr
        missing = [m for m in must_have if m not in text]
        ok = r.returncode == code and not missing
        print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {r.returncode}")
        if not ok or os.environ.get("VERBOSE"):
            print("    " + text.strip().replace("\n", "\n    "))
        if not ok:
            self.failures.append(f"{label}: exit {r.returncode} (want {code}); missing {missing}")
        return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    c = Checker(args.moe)
    good = os.path.join(args.work, "good")
    write_checkpoint(good)
    tuned = "tuned config: "
    c.run("good checkpoint, TP 1", good, 1, 0,
          ["layer 0: MoE", "layer 1: dense MLP", "format=fp8_block", "inter 512", "kernel inter_dim 512", tuned,
           "tensors: valid", "summary: 1 MoE layer(s) validated at TP 1"])
    c.run("good checkpoint, TP 4 (ranks alike)", good, 4, 0,
          ["tp 0/4", "inter 128", "shared inter 64 padded 64", "ranks 1..3: alike rank 0", "valid for all 4"])
    out = c.run("good checkpoint, TP 8 (fp8 blocks straddle ranks)", good, 8, 0,
                ["tp 0/8", "tp 1/8", "tp 7/8", "inter 64", "phase 64", "valid for all 8"])
    if "alike rank 0" in out:
        c.failures.append("TP 8: ranks with different scale-block phases were called alike")
    c.run("TP 3 is refused", good, 3, 2, ["layer 0", "not divisible by TP 3"])

    name = "model.layers.0.mlp.experts.2.down_proj.weight_scale_inv"
    bad = os.path.join(args.work, "bad_scale")
    write_checkpoint(bad, override={name: (2, 3)})
    c.run("scale one block short", bad, 2, 2, ["layer 0", name, "[2, 3]", "[2, 4]"])
    name = "model.layers.0.mlp.shared_expert.up_proj.weight"
    bad = os.path.join(args.work, "bad_weight")
    write_checkpoint(bad, override={name: (384, H)})
    c.run("shared expert weight padded", bad, 1, 2, [name, "[384, 256]", "[256, 256]"])
    name = "model.layers.0.mlp.experts.3.gate_proj.weight"
    bad = os.path.join(args.work, "missing")
    write_checkpoint(bad, drop=[name])
    c.run("missing tensor", bad, 1, 2, [name, "missing"])
    c.run("not a directory", os.path.join(args.work, "nope"), 1, 2, ["not a directory"])
    for f in c.failures:
        print("FAIL", f)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
