#!/usr/bin/env python3
"""Session 22: how close each token's routing is to a tie, on the TP check's random Qwen3-30B-A3B (bf16, 2 layers)
along a token path, by an fp32 numpy forward of the checkpoint (Qwen3-MoE: RMSNorm, q/k norm, RoPE, GQA, softmax
top-k routing renormalised). For every layer and position it prints the gap between the 8th and 9th router
logits (the pick a bf16 rounding of the router input could swap) and checks its final logits against
`moe logits --backend cpu` on the same tokens (the C++ reference). A CPU job: run it where the checkpoint is.

  routing_margins.py MODEL_DIR TOKENS CPU_LOGITS.st      (TOKENS: comma-separated ids)"""
import json
import os
import struct
import sys

import numpy as np
from safetensors.numpy import load_file


def load_bf16_checkpoint(d):
    """Every tensor of the Hub layout's shards as float32 (bf16 widened by a shift: exact)."""
    out = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".safetensors"):
            continue
        with open(os.path.join(d, f), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
            blob = fh.read()
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            a, b = meta["data_offsets"]
            assert meta["dtype"] == "BF16", (name, meta["dtype"])
            raw = np.frombuffer(blob[a:b], dtype=np.uint16).astype(np.uint32) << 16
            out[name] = raw.view(np.float32).reshape(meta["shape"])
    return out


def rms_norm(x, w, eps):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * w).astype(np.float32)


def rope(x, theta):
    T, _, D = x.shape
    inv = 1.0 / theta ** (np.arange(0, D, 2, dtype=np.float64) / D)
    ang = np.arange(T)[:, None] * inv[None]
    cos, sin = np.cos(np.concatenate([ang, ang], -1))[:, None], np.sin(np.concatenate([ang, ang], -1))[:, None]
    rot = np.concatenate([-x[..., D // 2:], x[..., :D // 2]], -1)
    return (x * cos + rot * sin).astype(np.float32)


def main():
    d, tokens, cpu_path = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], sys.argv[3]
    cfg = json.load(open(os.path.join(d, "config.json")))
    W = load_bf16_checkpoint(d)
    H, nh, nkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    E, K, eps = cfg["num_experts"], cfg["num_experts_per_tok"], cfg["rms_norm_eps"]
    T = len(tokens)
    x = W["model.embed_tokens.weight"][tokens].astype(np.float32)
    gaps = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}"
        h = rms_norm(x, W[p + ".input_layernorm.weight"], eps)
        q = (h @ W[p + ".self_attn.q_proj.weight"].T).reshape(T, nh, hd)
        k = (h @ W[p + ".self_attn.k_proj.weight"].T).reshape(T, nkv, hd)
        v = (h @ W[p + ".self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
        q = rope(rms_norm(q, W[p + ".self_attn.q_norm.weight"], eps), cfg["rope_theta"])
        k = rope(rms_norm(k, W[p + ".self_attn.k_norm.weight"], eps), cfg["rope_theta"])
        k, v = np.repeat(k, nh // nkv, 1), np.repeat(v, nh // nkv, 1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd)
        s = np.where(np.tril(np.ones((T, T), bool))[None], s, -np.inf)
        pr = np.exp(s - s.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        x = x + np.einsum("hts,shd->thd", pr, v).reshape(T, nh * hd) @ W[p + ".self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + ".post_attention_layernorm.weight"], eps)
        logits = h @ W[p + ".mlp.gate.weight"].T
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out = np.zeros_like(x)
        for t in range(T):
            order = np.argsort(-logits[t], kind="stable")
            gaps.append((l, t, float(logits[t, order[K - 1]] - logits[t, order[K]])))
            top = order[:K]
            wts = probs[t, top] / probs[t, top].sum()
            for e, wt in zip(top, wts):
                ep = f"{p}.mlp.experts.{e}"
                g, u = W[ep + ".gate_proj.weight"] @ h[t], W[ep + ".up_proj.weight"] @ h[t]
                out[t] += wt * (W[ep + ".down_proj.weight"] @ (g / (1 + np.exp(-g)) * u))
        x = x + out
    final = rms_norm(x, W["model.norm.weight"], eps) @ W["lm_head.weight"].T
    ref = load_file(cpu_path)["logits"]
    print(f"numpy forward against moe logits --backend cpu: rel L2 {np.linalg.norm(final - ref) / np.linalg.norm(ref):.2e}, "
          f"argmax equal at {int((final.argmax(-1) == ref.argmax(-1)).sum())}/{T} positions")
    print("layer  position  8th-9th router logit gap")
    for l, t, g in gaps:
        print(f"{l:5d}  {t:8d}  {g:.5f}{'   <- smallest of its layer' if g == min(x[2] for x in gaps if x[0] == l) else ''}")


if __name__ == "__main__":
    main()
