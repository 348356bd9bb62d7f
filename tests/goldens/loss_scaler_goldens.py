#!/usr/bin/env python3
# Goldens for berth's LossScaler, computed by DeepSpeed itself (deepspeed==0.19.8, pinned in
# scripts/requirements.txt): the fp16 block's settings go through DeepSpeed's own DeepSpeedFP16Config and
# dynamic_loss_scale_args(), and CreateLossScaler (as the ZeRO optimizers call it) builds the
# deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler whose update_scale runs over overflow/no-overflow
# sequences. Each case records, per step, the scale in use, the scale and hysteresis after update_scale, the
# OVERFLOW line it logs (and every line it logs), and where it raises at the minimum scale.
#
# Two things around DeepSpeed's code, neither of them its arithmetic:
#   - update_scale asks deepspeed.comm for the rank (it logs on rank 0 only, and prints the rank). The comm
#     layer is not initialized here (on CPU its backend would JIT-compile a shared-memory op first), so
#     deepspeed.comm.get_rank answers 0, as on rank 0 of a one-process group.
#   - its lines go to deepspeed.utils.logger at INFO, which DeepSpeed's logger drops by default (level
#     WARNING): the logger is set to INFO, and a handler added to it collects the lines (its stdout handler
#     stays at WARNING, so nothing is printed).
#
# Usage (run with scripts/python): loss_scaler_goldens.py OUT.json
import json
import logging
import os
import random
import sys

import deepspeed
import deepspeed.comm
import torch
from deepspeed.runtime.fp16.loss_scaler import CreateLossScaler, DynamicLossScaler
from deepspeed.runtime.precision_config import DeepSpeedFP16Config
from deepspeed.utils import logger

OVERFLOW_PREFIX = "[deepspeed] OVERFLOW!"


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


LINES = Lines()


def run(name, power, window, hysteresis, consecutive, min_scale, overflows):
    # DeepSpeed's engine: fp16 block -> DeepSpeedFP16Config; loss_scale 0 means dynamic; the ZeRO optimizers
    # call CreateLossScaler(dtype, static_loss_scale, dynamic_scaling, dynamic_loss_args).
    fp16 = DeepSpeedFP16Config(enabled=True, loss_scale=0, initial_scale_power=power, loss_scale_window=window,
                               hysteresis=hysteresis, consecutive_hysteresis=consecutive,
                               min_loss_scale=min_scale)
    scaler = CreateLossScaler(dtype=torch.half, static_loss_scale=fp16.loss_scale,
                              dynamic_scaling=fp16.loss_scale == 0,
                              dynamic_loss_args=fp16.dynamic_loss_scale_args())
    assert isinstance(scaler, DynamicLossScaler), type(scaler)
    steps = []
    raised_at = None
    for i, overflow in enumerate(overflows):
        before = scaler.cur_scale
        LINES.lines = []
        try:
            scaler.update_scale(overflow)
        except Exception as e:
            assert "already at minimum" in str(e), e
            raised_at = i
            break
        overflow_lines = [line for line in LINES.lines if line.startswith(OVERFLOW_PREFIX)]
        assert len(overflow_lines) <= 1, LINES.lines
        steps.append({"overflow": overflow, "scale": before, "new_scale": scaler.cur_scale,
                      "hysteresis": scaler.cur_hysteresis, "cur_iter": scaler.cur_iter,
                      "last_overflow_iter": scaler.last_overflow_iter,
                      "log": overflow_lines[0] if overflow_lines else "", "log_lines": LINES.lines})
    return {"name": name, "initial_scale_power": power, "loss_scale_window": window, "hysteresis": hysteresis,
            "consecutive_hysteresis": consecutive, "min_loss_scale": min_scale, "steps": steps,
            "raised_at": raised_at}


def main():
    out = sys.argv[1]
    deepspeed.comm.get_rank = lambda group=None: 0
    logger.setLevel(logging.INFO)
    logger.addHandler(LINES)
    T, F = True, False
    pattern = [F, F, F, T, F, F, F, F, T, F, T, F, F, F, F, F, F, T, T, T, F, F, F, F]
    cases = [
        run("window3_hysteresis1", 4, 3, 1, F, 1, pattern),
        run("window3_hysteresis2", 4, 3, 2, F, 1, pattern),
        run("window3_hysteresis2_consecutive", 4, 3, 2, T, 1, pattern),
        run("min_scale_hit_hysteresis1", 2, 3, 1, F, 1, [F, T, T, T, T, F]),
        run("min_scale_hit_hysteresis2", 1, 3, 2, F, 1, [T, T, T, F, T, T, T]),
        run("min_scale_not_power_of_two", 3, 1000, 1, F, 3, [T, T, F, T]),
    ]
    rng = random.Random(6)
    long_run = [rng.random() < 0.3 for _ in range(300)]
    cases.append(run("random_window5_hysteresis3", 16, 5, 3, F, 1, long_run))
    cases.append(run("random_window5_hysteresis3_consecutive", 16, 5, 3, T, 1, long_run))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"deepspeed_version": deepspeed.__version__, "cases": cases}, f, indent=1)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
