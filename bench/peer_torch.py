#!/usr/bin/env python3
"""Peers for `moe bench`, measured on the same GPU in the same run: torch's grouped GEMMs running the same MoE
(routing, grouping by expert, two GEMMs, SiLU*up, weighted combine) on the same shapes, timed the same way (CUDA
graph replays, weights rotated over 8 layer copies). Also measures the card's bf16 / fp8 matmul peaks.

Prints one table and writes JSON (argv[1]). bf16: torch._grouped_mm. fp8: torch._scaled_grouped_mm with row-wise
scales (torch has no 128x128 block-scale grouped GEMM; the bytes read are the same fp8 weights)."""
import json
import statistics
import sys

import torch

SHAPES = {"qwen3-30b-a3b": (128, 2048, 768, 8)}
MS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096]
COPIES = 8


def time_graph(fn, calls, reps):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(2):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(times)


def peak_tflops():
    out = {}
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record()
    for _ in range(10):
        a @ b
    ev[1].record()
    ev[1].synchronize()
    out["bf16"] = 2 * n**3 * 10 / (ev[0].elapsed_time(ev[1]) * 1e-3) / 1e12
    try:
        af = a.to(torch.float8_e4m3fn)
        bf = b.to(torch.float8_e4m3fn).t().contiguous().t()
        sa = torch.ones(n, 1, device="cuda")
        sb = torch.ones(1, n, device="cuda")
        for _ in range(3):
            torch._scaled_mm(af, bf, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        torch.cuda.synchronize()
        ev[0].record()
        for _ in range(10):
            torch._scaled_mm(af, bf, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        ev[1].record()
        ev[1].synchronize()
        out["fp8"] = 2 * n**3 * 10 / (ev[0].elapsed_time(ev[1]) * 1e-3) / 1e12
    except Exception as e:  # noqa: BLE001 - report, do not hide
        print(f"# fp8 peak unavailable: {e}", file=sys.stderr)
    return out


def moe_grouped(fmt, E, H, I, K, M):
    dev = "cuda"
    x = (torch.randn(M, H, device=dev) * 0.5).to(torch.bfloat16)
    logits = torch.randn(M, E, device=dev) * 2
    # (E, K, N) column-major views, as the grouped GEMMs want them.
    w13 = [torch.randn(E, 2 * I, H, device=dev, dtype=torch.bfloat16).mul_(0.02).transpose(-2, -1) for _ in range(COPIES)]
    w2 = [torch.randn(E, H, I, device=dev, dtype=torch.bfloat16).mul_(0.02).transpose(-2, -1) for _ in range(COPIES)]
    if fmt == "fp8":
        w13 = [w.to(torch.float8_e4m3fn) for w in w13]
        w2 = [w.to(torch.float8_e4m3fn) for w in w2]
        s13 = torch.full((E, 2 * I), 0.01, device=dev)
        s2 = torch.full((E, H), 0.01, device=dev)

    def call(i):
        c = i % COPIES
        p = torch.softmax(logits, dim=-1)
        w, ids = torch.topk(p, K, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        flat = ids.flatten()
        order = torch.argsort(flat, stable=True)
        # bincount would sync with the host (not capturable); a fixed-size scatter does not.
        counts = torch.zeros(E, device=dev, dtype=torch.int64).scatter_add_(0, flat, torch.ones_like(flat))
        offs = torch.cumsum(counts, 0).to(torch.int32)
        a = x[order // K]
        if fmt == "bf16":
            gu = torch._grouped_mm(a, w13[c], offs=offs)
        else:
            amax = a.abs().amax(-1, keepdim=True).float().clamp(min=1e-10)
            sa = (amax / 448).flatten()
            aq = (a.float() / sa[:, None]).to(torch.float8_e4m3fn)
            gu = torch._scaled_grouped_mm(aq, w13[c], sa, s13, offs=offs, out_dtype=torch.bfloat16)
        g, u = gu[:, :I], gu[:, I:]
        h = (torch.nn.functional.silu(g.float()) * u.float()).to(torch.bfloat16)
        if fmt == "bf16":
            y = torch._grouped_mm(h, w2[c], offs=offs)
        else:
            amax = h.abs().amax(-1, keepdim=True).float().clamp(min=1e-10)
            sh = (amax / 448).flatten()
            hq = (h.float() / sh[:, None]).to(torch.float8_e4m3fn)
            y = torch._scaled_grouped_mm(hq, w2[c], sh, s2, offs=offs, out_dtype=torch.bfloat16)
        out = torch.empty(M * K, H, device=dev, dtype=torch.float32)
        out[order] = y.float()
        return (out.view(M, K, H) * w[..., None]).sum(1).to(torch.bfloat16)

    calls = 2 * COPIES if M <= 256 else COPIES
    return time_graph(call, calls, 30 if M <= 256 else 5)


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else None
    dev = torch.cuda.get_device_name()
    peaks = peak_tflops()
    print(f"# device {dev}; torch {torch.__version__}; measured matmul peaks (TFLOP/s): "
          + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()))
    rows = []
    print(f"{'peer':34s} {'shape':16s} {'M':>5s} {'time_us':>10s}")
    for name, (E, H, I, K) in SHAPES.items():
        for fmt, label in (("fp8", "torch._scaled_grouped_mm (rowwise)"), ("bf16", "torch._grouped_mm")):
            for M in MS:
                try:
                    us = moe_grouped(fmt, E, H, I, K, M)
                except Exception as e:  # noqa: BLE001 - an unavailable peer is reported, not hidden
                    print(f"{label:34s} {name:16s} {M:5d}  unavailable: {str(e).splitlines()[0][:120]}")
                    break
                print(f"{label:34s} {name:16s} {M:5d} {us:10.2f}", flush=True)
                rows.append({"peer": label, "format": fmt, "shape": name, "M": M, "time_us": us})
                torch.cuda.empty_cache()
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "peaks_tflops": peaks, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
