#!/usr/bin/env python3
# purpose: the Python baseline for `berth benchmark --inference`: transformers' BertForSequenceClassification
# (built as bench/train_step.py builds it: the preset's BertConfig, HF's init, SDPA attention unless
# --attn eager) in eval mode, timing forward passes (no labels) under torch.inference_mode on `berth
# benchmark`'s synthetic batch; prints one JSON line with the same fields as `berth benchmark --inference`.
#
# Usage: scripts/python bench/eval_step.py --model-preset bert-mini --batch-size 32 --seq-len 256 --steps 10
#        [--warmup 2] [--threads T] [--vocab-size 30522] [--seed 0] [--attn sdpa|eager] [--bf16]
#        [--grad-mode inference|no_grad]   (no_grad: torch.no_grad(), as HF Trainer's prediction_step)
# Run it with OMP_WAIT_POLICY=PASSIVE in the environment when comparing with berth (bench/eval_step.sh does).

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_bench_common import add_common_args, autocast, build, print_result, step_flops, wait  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap)
    ap.add_argument("--grad-mode", default="inference", choices=["inference", "no_grad"])
    a = ap.parse_args()
    model, ids, mask, _ = build(a)
    model.eval()
    grad_mode = torch.inference_mode if a.grad_mode == "inference" else torch.no_grad

    step = []
    with grad_mode():
        for s in range(a.warmup + a.steps):
            t0 = time.perf_counter()
            with autocast(a):
                logits = model(input_ids=ids, attention_mask=mask).logits
            logits = logits.float()  # as berth's evaluation hands back float logits
            wait(a)
            t1 = time.perf_counter()
            if s >= a.warmup:
                step.append((t1 - t0) * 1e3)
    # A forward is a third of a training step's matmul FLOPs (2 per weight per token, 4·L·B·T²·C).
    print_result(a, model, step, step_flops(model.config, a.batch_size, a.seq_len) / 3.0, {
        "mode": "inference",
        "forward_ms": statistics.median(step),
        "grad_mode": a.grad_mode,
    })


if __name__ == "__main__":
    main()
