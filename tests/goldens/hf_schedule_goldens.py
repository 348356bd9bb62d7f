#!/usr/bin/env python3
# purpose: goldens for HF's lr_scheduler_type with lr_scheduler_kwargs, computed by transformers itself
# (transformers.get_scheduler, as Trainer.create_scheduler calls it with args.lr_scheduler_kwargs) for the
# schedules transformers added after the first five: cosine_with_restarts, polynomial with kwargs,
# inverse_sqrt, cosine_with_min_lr, warmup_stable_decay, and reduce_lr_on_plateau (torch's
# ReduceLROnPlateau, stepped on a sequence of evaluation metrics as HF's Trainer steps it).
#
# Usage: hf_schedule_goldens.py OUT_JSON (run with scripts/python). Writes a JSON list of cases:
#   {"type", "base_lr", "warmup_steps", "total_steps", "kwargs": {...}, "lrs": [lr of optimizer step 0..]}
#   reduce_lr_on_plateau cases have "metrics": [...] and "lrs": the lr after each metric step instead.
import json
import sys

import torch
import transformers
from torch import nn

BASE_LR = 5e-4

# (type, warmup, total, kwargs): every kwarg name each schedule takes appears in some case.
LAMBDA_CASES = [
    ("cosine_with_restarts", 5, 40, {}),
    ("cosine_with_restarts", 5, 40, {"num_cycles": 3}),
    ("cosine_with_restarts", 0, 40, {"num_cycles": 2.5}),
    ("cosine", 4, 30, {"num_cycles": 1.5}),
    ("polynomial", 4, 30, {"lr_end": 1e-5, "power": 3.0}),
    ("inverse_sqrt", 5, 40, {}),
    ("inverse_sqrt", 0, 40, {}),
    ("inverse_sqrt", 5, 40, {"timescale": 20}),
    ("cosine_with_min_lr", 5, 40, {"min_lr_rate": 0.1}),
    ("cosine_with_min_lr", 5, 40, {"min_lr": 1e-4, "num_cycles": 1.0}),
    ("warmup_stable_decay", 5, 40, {"num_decay_steps": 10}),
    ("warmup_stable_decay", 6, 40, {"num_decay_steps": 12, "num_stable_steps": 10, "warmup_type": "cosine",
                                    "decay_type": "linear", "min_lr_ratio": 0.2}),
    ("warmup_stable_decay", 6, 40, {"num_decay_steps": 12, "warmup_type": "1-sqrt", "decay_type": "1-sqrt",
                                    "min_lr_ratio": 0.05}),
    ("warmup_stable_decay", 4, 40, {"num_decay_steps": 16, "decay_type": "cosine", "num_cycles": 1.0}),
    ("constant_with_warmup", 5, 20, {}),
]

# A loss that improves, stalls, jitters and improves again; an accuracy-like metric for mode max.
METRICS = [1.0, 0.8, 0.7, 0.7, 0.69995, 0.71, 0.72, 0.65, 0.65, 0.66, 0.66, 0.66, 0.64, 0.6399, 0.64, 0.7,
           0.7, 0.7, 0.7, 0.7]
PLATEAU_CASES = [
    ({}, METRICS),
    ({"patience": 1}, METRICS),
    ({"patience": 0, "factor": 0.5, "cooldown": 2}, METRICS),
    ({"patience": 1, "factor": 0.5, "threshold": 0.01, "threshold_mode": "abs"}, METRICS),
    ({"patience": 0, "factor": 0.3, "min_lr": 2e-5}, METRICS),
    ({"mode": "max", "patience": 1, "factor": 0.5, "threshold": 0.0}, [0.5, 0.6, 0.6, 0.55, 0.7, 0.7, 0.7]),
    ({"patience": 0, "factor": 0.9999, "eps": 1e-3}, METRICS[:6]),
]


def optimizer():
    return torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=BASE_LR)


def lambda_case(kind, warmup, total, kwargs):
    opt = optimizer()
    scheduler = transformers.get_scheduler(kind, opt, num_warmup_steps=warmup, num_training_steps=total,
                                           scheduler_specific_kwargs=dict(kwargs))
    lrs = []
    for _ in range(total + 5):  # a few steps past the end
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return {"type": kind, "base_lr": BASE_LR, "warmup_steps": warmup, "total_steps": total, "kwargs": kwargs,
            "lrs": lrs}


def plateau_case(kwargs, metrics):
    opt = optimizer()
    scheduler = transformers.get_scheduler("reduce_lr_on_plateau", opt, num_warmup_steps=0,
                                           num_training_steps=100, scheduler_specific_kwargs=dict(kwargs))
    lrs = []
    for metric in metrics:
        scheduler.step(metric)  # as Trainer._evaluate does after each evaluation
        lrs.append(opt.param_groups[0]["lr"])
    return {"type": "reduce_lr_on_plateau", "base_lr": BASE_LR, "warmup_steps": 0, "total_steps": 100,
            "kwargs": kwargs, "metrics": metrics, "lrs": lrs}


def main():
    cases = [lambda_case(*c) for c in LAMBDA_CASES] + [plateau_case(*c) for c in PLATEAU_CASES]
    with open(sys.argv[1], "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
