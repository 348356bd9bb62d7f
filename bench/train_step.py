#!/usr/bin/python3
# purpose: the Python baseline for `berth benchmark`: HF's BertForSequenceClassification (eager, plain PyTorch, the
# reference model of tests/goldens/bert_goldens.py) trained on synthetic tokens with torch.optim.AdamW; prints one
# JSON line with the same fields as `berth benchmark`.
#
# Usage: /usr/bin/python3 bench/train_step.py --model-preset bert-mini --batch-size 8 --seq-len 128 --steps 10
#        [--warmup 2] [--threads T] [--vocab-size 30522]
# Run it with OMP_WAIT_POLICY=PASSIVE in the environment when comparing with berth (bench/train_step.sh does).

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens"))
from bert_goldens import BertForSequenceClassification, base_config  # noqa: E402

# Same sizes as include/berth/model/bert_presets.h: layers, hidden, heads, intermediate.
PRESETS = {
    "bert-tiny": (2, 128, 2, 512),
    "bert-mini": (4, 256, 4, 1024),
    "bert-small": (4, 512, 8, 2048),
    "bert-base": (12, 768, 12, 3072),
}


def step_flops(c, batch, seq):
    # The formula of cli/benchmark_command.cpp: 6 FLOPs per matmul weight per token, attention 12·L·B·T²·C.
    C, I, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    encoder = 6.0 * L * (4 * C * C + 2 * C * I) * batch * seq
    attention = 12.0 * L * batch * seq * seq * C
    head = 6.0 * batch * (C * C + C * len(c["id2label"]))
    return encoder + attention + head


def hf_init(model, std):
    # HF's _init_weights: normal(0, std) weights, zero biases, LayerNorm 1/0, zero padding row.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                m.weight.normal_(0.0, std)
                m.bias.zero_()
            elif isinstance(m, torch.nn.Embedding):
                m.weight.normal_(0.0, std)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
            elif isinstance(m, torch.nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-preset", default="bert-mini", choices=sorted(PRESETS))
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=30522)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    layers, hidden, heads, intermediate = PRESETS[a.model_preset]
    c = base_config(vocab_size=a.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                    num_attention_heads=heads, intermediate_size=intermediate, max_position_embeddings=512)
    torch.manual_seed(a.seed)
    model = BertForSequenceClassification(c)
    hf_init(model, c["initializer_range"])
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.randint(c["vocab_size"], (a.batch_size, a.seq_len))
    mask = torch.ones(a.batch_size, a.seq_len, dtype=torch.long)
    types = torch.zeros(a.batch_size, a.seq_len, dtype=torch.long)
    labels = torch.randint(len(c["id2label"]), (a.batch_size,))

    fwd, bwd, opt, step = [], [], [], []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        loss = model(ids, mask, types, labels)[1]
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if s < a.warmup:
            continue
        fwd.append((t1 - t0) * 1e3)
        bwd.append((t2 - t1) * 1e3)
        opt.append((t3 - t2) * 1e3)
        step.append((t3 - t0) * 1e3)
    step_ms = statistics.median(step)
    flops = step_flops(c, a.batch_size, a.seq_len)
    print(json.dumps({
        "implementation": "python",
        "preset": a.model_preset,
        "batch_size": a.batch_size,
        "seq_len": a.seq_len,
        "threads": torch.get_num_threads(),
        "steps": a.steps,
        "samples_per_second": a.batch_size * 1000.0 / step_ms,
        "step_ms": step_ms,
        "min_step_ms": min(step),
        "forward_ms": statistics.median(fwd),
        "backward_ms": statistics.median(bwd),
        "optimizer_ms": statistics.median(opt),
        "model_tflop_per_step": flops * 1e-12,
        "achieved_gflops": flops / (step_ms * 1e-3) * 1e-9,
    }), flush=True)


if __name__ == "__main__":
    main()
