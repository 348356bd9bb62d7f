#!/usr/bin/env python3
# purpose: the Python baseline for `berth benchmark`: transformers' BertForSequenceClassification, built from
# a BertConfig of the preset's sizes with HF's init and HF's default attention (SDPA; --attn eager for the
# eager path), trained on `berth benchmark`'s synthetic tokens with torch.optim.AdamW in its fastest CPU
# variant; prints one JSON line with the same fields as `berth benchmark`.
#
# AdamW: --adamw fused (default), foreach or for-loop; torch 2.15's own default on CPU tensors is the
# for-loop (foreach defaults to CUDA tensors only). fused=True is the default because it was the fastest in a
# 2-step bert-tiny sanity run on torch 2.15 (optimizer 3.6 ms vs foreach 26 ms, for-loop 22 ms); the bert-mini
# comparison (bench/README.md) is still to run.
# Parameter groups as HF Trainer makes them: no weight decay on biases and LayerNorm weights (as berth's
# hf_param_groups), lr 1e-4, weight decay 0.01, gradients reset to none.
#
# Usage: scripts/python bench/train_step.py --model-preset bert-mini --batch-size 8 --seq-len 128 --steps 10
#        [--warmup 2] [--threads T] [--vocab-size 30522] [--seed 0] [--attn sdpa|eager]
#        [--adamw fused|foreach|for-loop] [--bf16]
# Run it with OMP_WAIT_POLICY=PASSIVE in the environment when comparing with berth (bench/train_step.sh does).

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_bench_common import add_common_args, autocast, build, print_result, step_flops, wait  # noqa: E402

ADAMW = {"fused": {"fused": True}, "foreach": {"foreach": True}, "for-loop": {"foreach": False, "fused": False}}


def param_groups(model, weight_decay):
    # HF Trainer's get_decay_parameter_names: every parameter but biases and LayerNorm's.
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap)
    ap.add_argument("--adamw", default="fused", choices=sorted(ADAMW))
    a = ap.parse_args()
    model, ids, mask, labels = build(a)
    model.train()
    optimizer = torch.optim.AdamW(param_groups(model, 0.01), lr=1e-4, **ADAMW[a.adamw])

    fwd, bwd, opt, step = [], [], [], []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with autocast(a):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        wait(a)
        t1 = time.perf_counter()
        loss.backward()
        wait(a)
        t2 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        wait(a)
        t3 = time.perf_counter()
        if s < a.warmup:
            continue
        fwd.append((t1 - t0) * 1e3)
        bwd.append((t2 - t1) * 1e3)
        opt.append((t3 - t2) * 1e3)
        step.append((t3 - t0) * 1e3)
    print_result(a, model, step, step_flops(model.config, a.batch_size, a.seq_len), {
        "forward_ms": statistics.median(fwd),
        "backward_ms": statistics.median(bwd),
        "optimizer_ms": statistics.median(opt),
        "adamw": a.adamw,
    })


if __name__ == "__main__":
    main()
