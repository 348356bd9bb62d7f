#!/usr/bin/env python3
# purpose: the attention choice of kernels/scaled_attention.h, measured: torch's scaled_dot_product_attention
# (what berth calls where no dropout applies) vs the eager chain it replaces (q·kᵀ · scale + padding mask,
# softmax, · v; HF's eager attention), at the shapes of the issue-30 benchmarks, fp32 and bf16, inference and
# forward + backward; interleaved rounds, median and spread, the eager/fused ratio. One JSON line per case.
#
# Usage: OMP_WAIT_POLICY=PASSIVE scripts/python bench/attention_bench.py [--rounds 7] [--threads 1]

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

# (batch, heads, tokens, head size, with gradients, mask): bert-base training 8 x 128, eval 32 x 256 and
# 1 x 128, long sequences 8 x 512, bert-mini's 4 heads (key padding: an encoder's mask); a decoder's causal mask
# over right padding (GPT-2 / Llama training and evaluation, 8 x 256).
CASES = [(8, 12, 128, 64, True, "padding"), (8, 4, 128, 64, True, "padding"), (32, 12, 256, 64, False, "padding"),
         (1, 12, 128, 64, False, "padding"), (8, 12, 512, 64, False, "padding"), (8, 12, 256, 64, True, "causal"),
         (8, 12, 256, 64, False, "causal")]


def make_mask(batch, tokens, kind):
    """(B, 1, 1, S) key padding, or (B, 1, T, S) causal plus key padding; one sequence half padded."""
    lowest = torch.finfo(torch.float32).min
    mask = torch.zeros(batch, 1, 1, tokens)
    mask[0, ..., tokens // 2:] = lowest
    if kind == "causal":
        mask = (mask + torch.triu(torch.full((tokens, tokens), lowest), 1)).clamp_min(lowest)
    return mask


def eager(q, k, v, mask, scale):
    return torch.softmax(q @ k.transpose(-1, -2) * scale + mask, -1).to(v.dtype) @ v  # softmax in float32 for bf16


def fused(q, k, v, mask, scale):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype), scale=scale)


def timed(fn, q, k, v, mask, grad):
    start = time.perf_counter()
    if grad:
        fn(q, k, v, mask, q.shape[-1] ** -0.5).sum().backward()
    else:
        with torch.inference_mode():
            fn(q, k, v, mask, q.shape[-1] ** -0.5)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for dtype in a.dtypes:
        for batch, heads, tokens, head_size, grad, kind in CASES:
            torch.manual_seed(0)
            q, k, v = (torch.randn(batch, heads, tokens, head_size, dtype=getattr(torch, dtype),
                                   requires_grad=grad) for _ in range(3))
            mask = make_mask(batch, tokens, kind)
            times = {"eager": [], "fused": []}
            for fn in (eager, fused):  # warm-up
                timed(fn, q, k, v, mask, grad)
            for r in range(a.rounds):
                order = (eager, fused) if r % 2 == 0 else (fused, eager)
                for fn in order:
                    times[fn.__name__].append(timed(fn, q, k, v, mask, grad))
            ratios = [e / f for e, f in zip(times["eager"], times["fused"])]
            print(json.dumps({
                "dtype": dtype, "batch": batch, "heads": heads, "tokens": tokens, "head_size": head_size,
                "mask": kind, "mode": "forward+backward" if grad else "inference", "threads": a.threads,
                "eager_ms": round(1e3 * statistics.median(times["eager"]), 2),
                "fused_ms": round(1e3 * statistics.median(times["fused"]), 2),
                "eager_over_fused": round(statistics.median(ratios), 2),
                "spread": [round(min(ratios), 2), round(max(ratios), 2)]}), flush=True)


if __name__ == "__main__":
    main()
