#!/usr/bin/env python3
"""An independent numpy implementation of a tiny Qwen3-MoE (and OLMoE / Mixtral) forward, for the CPU model tests.

Builds a random checkpoint in the Hub layout (config.json + model.safetensors, bf16 or fp8 block scale), runs the
forward in float32 following HF transformers' Qwen3-MoE semantics and FORMATS.md (fp8: weights dequantised per
128x128 block, every fp8 linear's input fake-quantised per token per 1x128 group; inside the MoE experts h is
rounded to bf16 before its quantisation, as FORMATS.md section 4 says) and writes golden.safetensors with
`input_ids` [T] I32 and `logits` [T, V] F32. Nothing here is shared with the C++ code.

Two rules keep the golden the same on every machine and numpy version and keep the comparison well posed:
- Sums and transcendental functions are evaluated in float64 and rounded once to float32 where the fp32 forward
  rounds (matmul, einsum, mean, exp, sin, cos, pow). float32 BLAS (OpenBLAS picks its kernel per CPU: Haswell,
  SkylakeX, ...) and numpy's SIMD float32 exp/sin/cos differ between machines in the last bits; the float64 forms
  round to the same float32 values everywhere.
- fp8 activation quantisation, bf16 rounding and top-k routing are discontinuous. An input within a few ulps of a
  rounding midpoint is decided by last-bit noise, which differs between any two correct fp32 implementations (the
  order of a dot product's sums), and one flipped fp8 code before the last layer moves the logits by ~1e-2
  relative L2 through the codes it flips downstream. So the forward is repeated with noise of a few times that
  size added to every matmul / einsum result; a checkpoint whose logits move by more than STABLE_REL_L2 (or
  change their argmax) is redrawn with the next seed. Deterministic; a redraw is reported on stderr.

usage: make_numpy_golden.py --out DIR --variant qwen3-bf16|qwen3-fp8-yarn|olmoe-bf16|mixtral-bf16
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

F32 = np.float32
F64 = np.float64


# ---- scalar formats -------------------------------------------------------------------------------------------
def bf16_bits(x):
    u = np.ascontiguousarray(x, dtype=F32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def round_bf16(x):
    return (bf16_bits(x).astype(np.uint32) << 16).view(F32)


def e4m3_table():
    vals = []
    for c in range(0x7F):  # positive codes 0..126 (127 is NaN)
        e, m = c >> 3, c & 7
        vals.append(m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    return np.array(vals, dtype=np.float64)


E4M3 = e4m3_table()


def e4m3_codes(x):
    """Round to nearest e4m3fn code, ties to the even code, after clamping to +-448."""
    x = np.asarray(x, dtype=F32).astype(np.float64)
    a = np.minimum(np.abs(x), 448.0)
    hi = np.clip(np.searchsorted(E4M3, a, side="left"), 0, 126)
    lo = np.clip(hi - 1, 0, 126)
    dlo, dhi = a - E4M3[lo], E4M3[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    pick = np.where(a == E4M3[hi], hi, pick)
    return (pick | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def e4m3_values(codes):
    mag = E4M3[np.minimum(codes & 0x7F, 126)].astype(F32)
    return np.where(codes & 0x80, -mag, mag).astype(F32)


def quantize_weight_fp8(w):
    """128x128 block scale: scale_inv = amax / 448 per block (1 for an all-zero block)."""
    rows, cols = w.shape
    br, bc = -(-rows // 128), -(-cols // 128)
    q = np.zeros(w.shape, np.uint8)
    s = np.zeros((br, bc), F32)
    for i in range(br):
        for j in range(bc):
            blk = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            amax = F32(np.abs(blk).max())
            scale = F32(amax / F32(448)) if amax > 0 else F32(1)
            s[i, j] = scale
            q[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = e4m3_codes(blk / scale)
    return q, s


def dequantize_weight_fp8(q, s):
    scale = np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[: q.shape[0], : q.shape[1]]
    return (e4m3_values(q) * scale).astype(F32)


def fake_quant_fp8(x):
    """Per row, per 1x128 group (the last may be shorter): s = max(amax, 1e-10) / 448; q = e4m3(x / s); q * s."""
    x = np.asarray(x, F32)
    out = np.empty_like(x)
    for g in range(0, x.shape[-1], 128):
        part = x[..., g:g + 128]
        s = (np.maximum(np.abs(part).max(axis=-1, keepdims=True), F32(1e-10)) / F32(448)).astype(F32)
        out[..., g:g + 128] = e4m3_values(e4m3_codes((part / s).astype(F32))) * s
    return out


# ---- float32 arithmetic that rounds alike everywhere ---------------------------------------------------------
class Arith:
    """The forward's sums: exact float32 products summed in float64, rounded once to float32. With a jitter
    generator, every result also gets noise of relative size JITTER (of the value plus its row's RMS, so sums
    that cancel get their share), standing in for another implementation's summation order."""

    def __init__(self, jitter=None):
        self.jitter = jitter

    def _out(self, r):
        if self.jitter is None:
            return r.astype(F32)
        rms = np.sqrt((r ** 2).mean(axis=-1, keepdims=True))
        return (r + JITTER * (np.abs(r) + rms) * self.jitter.standard_normal(r.shape)).astype(F32)

    def mm(self, a, b):
        return self._out(np.asarray(a, F64) @ np.asarray(b, F64))

    def einsum(self, spec, a, b):
        return self._out(np.einsum(spec, np.asarray(a, F64), np.asarray(b, F64)))


def exp32(x):
    return np.exp(np.asarray(x, F64)).astype(F32)


def silu32(g):
    return (g / (F32(1) + exp32(-g))).astype(F32)


# ---- checkpoint writing ---------------------------------------------------------------------------------------
def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---- the model ------------------------------------------------------------------------------------------------
# seed: the first seed that the stability check accepts (for qwen3-fp8-yarn, 1234..1247 each put an fp8 activation
# code or routing decision within reach of fp32 summation noise).
VARIANTS = {
    "qwen3-bf16": dict(family="qwen3", fp8=False, hidden=64, inter=128, moe_inter=64, vocab=512, tie=False,
                       yarn=False, seed=1234),
    "qwen3-fp8-yarn": dict(family="qwen3", fp8=True, hidden=160, inter=192, moe_inter=64, vocab=384, tie=True,
                           yarn=True, seed=1248),
    "olmoe-bf16": dict(family="olmoe", fp8=False, hidden=64, inter=128, moe_inter=64, vocab=512, tie=False,
                       yarn=False, seed=1234),
    "mixtral-bf16": dict(family="mixtral", fp8=False, hidden=64, inter=128, moe_inter=64, vocab=512, tie=False,
                         yarn=False, seed=1234),
}
# Conditioning (see the module docstring). Measured at the fp8 quantiser inputs x / s, the C++ CPU reference and this
# script differ by up to ~10 ulps of 448; JITTER = 2e-7 gives three to four times the C++ spread there. Over 400
# fp8 checkpoints (seeds 1234.., three shapes) every one it accepted passed check_logits, and every failing one was
# rejected.
JITTER, STABILITY_RUNS, STABLE_REL_L2, MAX_REDRAWS = 2e-7, 8, 1e-4, 200
LAYERS, HEADS, KV_HEADS, HEAD_DIM, EXPERTS, TOP_K = 3, 4, 2, 32, 8, 2
EPS, THETA = 1e-6, 10000.0
TOKENS = [3, 17, 250, 9, 101, 42, 42, 7, 300, 11, 64, 5, 199, 23, 77, 128, 1, 88, 260, 31]


def make_config(v):
    c = {
        "vocab_size": v["vocab"], "hidden_size": v["hidden"], "intermediate_size": v["inter"],
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM, "max_position_embeddings": 4096, "rms_norm_eps": EPS, "rope_theta": THETA,
        "tie_word_embeddings": v["tie"], "attention_bias": False, "hidden_act": "silu", "bos_token_id": 1,
        "eos_token_id": 2, "torch_dtype": "bfloat16",
    }
    if v["family"] == "qwen3":
        c.update(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", num_experts=EXPERTS,
                 num_experts_per_tok=TOP_K, moe_intermediate_size=v["moe_inter"], norm_topk_prob=True,
                 decoder_sparse_step=1, mlp_only_layers=[1])
    elif v["family"] == "olmoe":
        # OLMoE: every layer MoE, experts sized by intermediate_size, no top-k renormalisation.
        c.update(architectures=["OlmoeForCausalLM"], model_type="olmoe", num_experts=EXPERTS,
                 num_experts_per_tok=TOP_K, intermediate_size=v["moe_inter"], norm_topk_prob=False)
    else:
        c.update(architectures=["MixtralForCausalLM"], model_type="mixtral", num_local_experts=EXPERTS,
                 num_experts_per_tok=TOP_K, intermediate_size=v["moe_inter"])
    if v["yarn"]:
        c["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}
    if v["fp8"]:
        c["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                    "weight_block_size": [128, 128]}
    return c


class Weights:
    """Random weights, stored (bf16 or fp8) and as the float32 values the forward uses."""

    def __init__(self, rng, fp8):
        self.rng, self.fp8, self.stored, self.vals = rng, fp8, {}, {}

    def vector(self, name, shape, mean=1.0, std=0.1):
        w = round_bf16((mean + std * self.rng.standard_normal(shape)).astype(F32))
        self.stored[name] = ("BF16", bf16_bits(w))
        self.vals[name] = w

    def linear(self, module, rows, cols, quantised=True):
        w = (self.rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(F32)
        if self.fp8 and quantised:
            q, s = quantize_weight_fp8(w)
            self.stored[module + ".weight"] = ("F8_E4M3", q)
            self.stored[module + ".weight_scale_inv"] = ("F32", s)
            self.vals[module] = dequantize_weight_fp8(q, s)
        else:
            w = round_bf16(w)
            self.stored[module + ".weight"] = ("BF16", bf16_bits(w))
            self.vals[module] = w


def build(v, seed):
    cfg = make_config(v)
    fam, H = v["family"], v["hidden"]
    W = Weights(np.random.default_rng(seed), v["fp8"])
    W.vector("model.embed_tokens.weight", (v["vocab"], H), 0.0, 1.0)
    qd, kd = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    moe_block = "block_sparse_moe" if fam == "mixtral" else "mlp"
    names = {"qwen3": ("gate_proj", "up_proj", "down_proj"), "olmoe": ("gate_proj", "up_proj", "down_proj"),
             "mixtral": ("w1", "w3", "w2")}[fam]
    for l in range(LAYERS):
        p = f"model.layers.{l}"
        W.vector(p + ".input_layernorm.weight", (H,))
        W.vector(p + ".post_attention_layernorm.weight", (H,))
        for proj, rows, cols in (("q_proj", qd, H), ("k_proj", kd, H), ("v_proj", kd, H), ("o_proj", H, qd)):
            W.linear(f"{p}.self_attn.{proj}", rows, cols)
        if fam == "qwen3":
            W.vector(p + ".self_attn.q_norm.weight", (HEAD_DIM,))
            W.vector(p + ".self_attn.k_norm.weight", (HEAD_DIM,))
        elif fam == "olmoe":
            W.vector(p + ".self_attn.q_norm.weight", (qd,))
            W.vector(p + ".self_attn.k_norm.weight", (kd,))
        if fam == "qwen3" and l in cfg["mlp_only_layers"]:
            W.linear(p + ".mlp.gate_proj", v["inter"], H)
            W.linear(p + ".mlp.up_proj", v["inter"], H)
            W.linear(p + ".mlp.down_proj", H, v["inter"])
            continue
        I = v["moe_inter"]
        W.linear(f"{p}.{moe_block}.gate", EXPERTS, H, quantised=False)
        for e in range(EXPERTS):
            W.linear(f"{p}.{moe_block}.experts.{e}.{names[0]}", I, H)
            W.linear(f"{p}.{moe_block}.experts.{e}.{names[1]}", I, H)
            W.linear(f"{p}.{moe_block}.experts.{e}.{names[2]}", H, I)
    W.vector("model.norm.weight", (H,))
    if not v["tie"]:
        W.linear("lm_head", v["vocab"], H, quantised=False)
    return cfg, W, moe_block, names


def rms_norm(x, w):
    # HF: weight * (x * rsqrt(mean(x^2) + eps)); the mean of the squares in float64.
    var = (np.asarray(x, F64) ** 2).mean(axis=-1, keepdims=True).astype(F32)
    inv = (F32(1) / np.sqrt(var + F32(EPS))).astype(F32)
    return (w * (x * inv)).astype(F32)


def inv_freq(cfg):
    dim = HEAD_DIM
    pos_freqs = (F64(F32(THETA)) ** (np.arange(0, dim, 2).astype(F32) / F32(dim)).astype(F64)).astype(F32)
    rs = cfg.get("rope_scaling")
    if not rs:
        return (F32(1) / pos_freqs).astype(F32), F32(1)
    # YaRN, as transformers' _compute_yarn_parameters.
    import math
    factor, orig = rs["factor"], rs["original_max_position_embeddings"]
    attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    def corr(rot):
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(THETA))
    low, high = max(math.floor(corr(32)), 0), min(math.ceil(corr(1)), dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=F32) - F32(low)) / F32(high - low), 0, 1).astype(F32)
    extra_factor = F32(1) - ramp
    extra, interp = F32(1) / pos_freqs, F32(1) / (F32(factor) * pos_freqs)
    return (interp * (1 - extra_factor) + extra * extra_factor).astype(F32), F32(attention_factor)


def rope(x, pos, freqs, scaling):
    # x [T, heads, D]; neox rotate-half.
    ang = (pos[:, None].astype(F32) * freqs[None, :]).astype(F32)
    c, s = np.cos(ang.astype(F64)).astype(F32), np.sin(ang.astype(F64)).astype(F32)
    cos = np.concatenate([c, c], -1)[:, None, :] * scaling
    sin = np.concatenate([s, s], -1)[:, None, :] * scaling
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return (x * cos + rot * sin).astype(F32)


def forward(cfg, v, W, moe_block, names, tokens, jitter=None):
    fam, fp8 = v["family"], v["fp8"]
    vals = W.vals
    ar = Arith(jitter)
    lin_in = fake_quant_fp8 if fp8 else (lambda a: a)
    def lin(module, x, quantised=True):
        return ar.mm(lin_in(x) if quantised else x, vals[module].T)
    T = len(tokens)
    x = vals["model.embed_tokens.weight"][np.array(tokens)].astype(F32)
    freqs, scaling = inv_freq(cfg)
    pos = np.arange(T)
    qd, kd = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    for l in range(LAYERS):
        p = f"model.layers.{l}"
        h = rms_norm(x, vals[p + ".input_layernorm.weight"])
        q, k, vv = lin(p + ".self_attn.q_proj", h), lin(p + ".self_attn.k_proj", h), lin(p + ".self_attn.v_proj", h)
        if fam == "olmoe":
            q, k = rms_norm(q, vals[p + ".self_attn.q_norm.weight"]), rms_norm(k, vals[p + ".self_attn.k_norm.weight"])
        q, k, vv = q.reshape(T, HEADS, HEAD_DIM), k.reshape(T, KV_HEADS, HEAD_DIM), vv.reshape(T, KV_HEADS, HEAD_DIM)
        if fam == "qwen3":
            q, k = rms_norm(q, vals[p + ".self_attn.q_norm.weight"]), rms_norm(k, vals[p + ".self_attn.k_norm.weight"])
        q, k = rope(q, pos, freqs, scaling), rope(k, pos, freqs, scaling)
        rep = HEADS // KV_HEADS
        k, vv = np.repeat(k, rep, axis=1), np.repeat(vv, rep, axis=1)
        scores = ar.einsum("thd,shd->hts", q, k) * F32(HEAD_DIM ** -0.5)
        scores = np.where(np.tril(np.ones((T, T), bool))[None], scores, -np.inf)
        scores = exp32(scores - scores.max(-1, keepdims=True))
        probs = (scores / scores.astype(F64).sum(-1, keepdims=True).astype(F32)).astype(F32)
        ctx = ar.einsum("hts,shd->thd", probs, vv).reshape(T, qd)
        x = x + lin(p + ".self_attn.o_proj", ctx)
        h = rms_norm(x, vals[p + ".post_attention_layernorm.weight"])
        if fam == "qwen3" and l in cfg["mlp_only_layers"]:
            g, u = lin(p + ".mlp.gate_proj", h), lin(p + ".mlp.up_proj", h)
            x = x + lin(p + ".mlp.down_proj", (silu32(g) * u).astype(F32))
            continue
        mb = f"{p}.{moe_block}"
        logits = ar.mm(h, vals[mb + ".gate"].T)
        pr = exp32(logits - logits.max(-1, keepdims=True))
        pr = (pr / pr.astype(F64).sum(-1, keepdims=True).astype(F32)).astype(F32)
        renorm = cfg.get("norm_topk_prob", fam != "olmoe")
        out = np.zeros_like(x)
        a = lin_in(h)
        for t in range(T):
            top = np.argsort(-pr[t], kind="stable")[:TOP_K]
            wts = pr[t, top] / pr[t, top].sum() if renorm else pr[t, top]
            for e, wt in zip(top, wts):
                ep = f"{mb}.experts.{e}"
                g, u = ar.mm(vals[f"{ep}.{names[0]}"], a[t]), ar.mm(vals[f"{ep}.{names[1]}"], a[t])
                act = (silu32(g) * u).astype(F32)
                if fp8:
                    act = fake_quant_fp8(round_bf16(act)[None])[0]  # FORMATS.md 4: h to bf16, then act quant
                out[t] += F32(wt) * ar.mm(vals[f"{ep}.{names[2]}"], act)
        x = x + out
    x = rms_norm(x, vals["model.norm.weight"])
    head = vals["model.embed_tokens.weight"] if v["tie"] else vals["lm_head"]
    return ar.mm(x, head.T)


def instability(cfg, v, W, moe_block, names, tokens, logits, seed):
    """The largest relative L2 change of the logits over the jittered forwards (inf if an argmax changes)."""
    worst = 0.0
    ref = logits.astype(F64)
    for run in range(STABILITY_RUNS):
        got = forward(cfg, v, W, moe_block, names, tokens, np.random.default_rng([seed, run])).astype(F64)
        if not np.array_equal(got.argmax(-1), ref.argmax(-1)):
            return np.inf
        worst = max(worst, float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    ap.add_argument("--seed", type=int, help="first seed to try (default: the variant's)")
    args = ap.parse_args()
    v = VARIANTS[args.variant]
    os.makedirs(args.out, exist_ok=True)
    tokens = [t % v["vocab"] for t in TOKENS]
    first = v["seed"] if args.seed is None else args.seed
    for seed in range(first, first + MAX_REDRAWS):
        cfg, W, moe_block, names = build(v, seed)
        logits = forward(cfg, v, W, moe_block, names, tokens)
        moved = instability(cfg, v, W, moe_block, names, tokens, logits, seed)
        if moved <= STABLE_REL_L2:
            break
        print(f"make_numpy_golden: seed {seed}: jitter of {JITTER:g} moves the logits by {moved:.1e} "
              f"(> {STABLE_REL_L2:g}), a rounding decision on a knife edge; redrawing", file=sys.stderr)
    else:
        sys.exit(f"make_numpy_golden: no stable checkpoint in seeds {first}..{first + MAX_REDRAWS - 1}")
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(args.out, "model.safetensors"), W.stored)
    write_safetensors(os.path.join(args.out, "golden.safetensors"),
                      {"input_ids": ("I32", np.array(tokens, np.int32)), "logits": ("F32", logits)})
    print(",".join(map(str, tokens)))


if __name__ == "__main__":
    main()
