#!/usr/bin/env python3
# DeepSpeed's WarmupLR / WarmupDecayLR / WarmupCosineLR, computed by DeepSpeed itself (deepspeed==0.19.8, pinned in
# scripts/requirements.txt; deepspeed.runtime.lr_schedules) as its engine drives them: a torch.optim.AdamW over
# one parameter, and one scheduler.step() after each optimizer.step(). Records, per case, the constructor's
# arguments and the lr each optimizer step used; where DeepSpeed refuses the arguments, the error it raises.
#
# Usage (run with scripts/python): deepspeed_lr_goldens.py OUT.json. Writes
#   {"deepspeed_version": .., "cases": [{"type": "WarmupLR", "base_lr": .., "kwargs": {..}, "steps": ..,
#                                        "lrs": [..]} or {.., "error": "<DeepSpeed's message>"}, ..]}
# "kwargs" are the keyword arguments passed to the class (all given explicitly, none left to DeepSpeed's
# defaults); tests/optim/lr_scheduler_test.cpp builds berth's SchedulerOptions from them.
import json
import logging
import os
import sys

import deepspeed
import torch
from deepspeed.runtime import lr_schedules
from deepspeed.utils import logger

# (class name, optimizer lr, constructor kwargs, optimizer steps)
CASES = [
    ("WarmupLR", 1e-3,
     {"warmup_min_lr": 1e-5, "warmup_max_lr": 1e-3, "warmup_num_steps": 10, "warmup_type": "log"}, 20),
    # warmup_max_lr None: the optimizer's lr
    ("WarmupLR", 5e-5,
     {"warmup_min_lr": 0.0, "warmup_max_lr": None, "warmup_num_steps": 10, "warmup_type": "linear"}, 15),
    ("WarmupDecayLR", 2e-5,
     {"total_num_steps": 30, "warmup_min_lr": 0.0, "warmup_max_lr": 2e-5, "warmup_num_steps": 5,
      "warmup_type": "linear"}, 35),
    # DeepSpeed warms up at least 2 steps
    ("WarmupDecayLR", 1e-4,
     {"total_num_steps": 12, "warmup_min_lr": 1e-6, "warmup_max_lr": 1e-4, "warmup_num_steps": 1,
      "warmup_type": "log"}, 15),
    # 5 steps past total_num_steps
    ("WarmupCosineLR", 1e-3,
     {"total_num_steps": 40, "warmup_min_ratio": 0.1, "warmup_num_steps": 8, "cos_min_ratio": 1e-4,
      "warmup_type": "log"}, 45),
    # warmup_num_steps 0: DeepSpeed 0.19 refuses it (older versions warmed up over 2 steps)
    ("WarmupCosineLR", 3e-4,
     {"total_num_steps": 20, "warmup_min_ratio": 0.0, "warmup_num_steps": 0, "cos_min_ratio": 0.01,
      "warmup_type": "linear"}, 20),
    # no steps left after warmup: DeepSpeed 0.19 warns and holds cos_min_ratio once warmup ends
    ("WarmupCosineLR", 1e-3,
     {"total_num_steps": 10, "warmup_min_ratio": 0.0, "warmup_num_steps": 10, "cos_min_ratio": 1e-4,
      "warmup_type": "linear"}, 15),
]


def run(name, base_lr, kwargs, steps):
    case = {"type": name, "base_lr": base_lr, "kwargs": kwargs, "steps": steps}
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([param], lr=base_lr)
    try:
        scheduler = getattr(lr_schedules, name)(optimizer, **kwargs)
    except ValueError as e:
        case["error"] = str(e)
        return case
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])  # the lr this optimizer step uses
        param.grad = torch.zeros_like(param)
        optimizer.step()
        scheduler.step()
    case["lrs"] = lrs
    return case


def main():
    out = sys.argv[1]
    logger.setLevel(logging.ERROR)  # its warnings (lr read before the first step, total < warmup) are expected here
    cases = [run(*c) for c in CASES]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"deepspeed_version": deepspeed.__version__, "cases": cases}, f, indent=1)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
