#!/usr/bin/env python3
# purpose: train goldens: every "auto" value HF transformers (5.24.0, pinned in scripts/requirements.txt) fills
# into a DeepSpeed config, and every mismatch it refuses, from HfTrainerDeepSpeedConfig itself
# (trainer_config_process, then trainer_config_finalize, as the Trainer runs them): batch sizes, gradient
# clipping, optimizer and scheduler params, precision, the hidden-size keys, total_num_steps and
# warmup_num_steps (max(1, warmup): the clamp that lets runs without warmup train) over WarmupLR,
# WarmupDecayLR and WarmupCosineLR, ZeRO stages 1-3, with and without warmup, on 1 and 2 ranks.
#
# Usage: scripts/python tests/goldens/deepspeed_fill_goldens.py OUT_DIR. Writes OUT_DIR/cases.json: a list of
#   {"name", "deepspeed" (the config given), "args" (TrainingArguments values set; warmup_steps as HF 5 reads
#    it: >= 1 a count, below 1 a ratio of the run's steps), "world_size", "num_training_steps", "hidden_size",
#    "filled" (HF's config after finalize; null when HF refuses), "mismatches" (the "- ds KEY=... vs hf
#    ARG=..." lines of HF's error; empty when it accepts)}.

import itertools
import json
import os
import sys
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from transformers import BertConfig, TrainingArguments  # noqa: E402
from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig  # noqa: E402

HIDDEN_SIZE = 48
TOTAL_STEPS = 40

# DeepSpeed's own parameter names per scheduler (deepspeed/runtime/lr_schedules.py), every one "auto" that HF
# fills; WarmupCosineLR has no min/max lr (it scales the optimizer's lr by ratios).
SCHEDULER_PARAMS = {
    "WarmupLR": ["warmup_min_lr", "warmup_max_lr", "warmup_num_steps"],
    "WarmupDecayLR": ["warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "total_num_steps"],
    "WarmupCosineLR": ["warmup_num_steps", "total_num_steps"],
}

ZERO_AUTO = {"reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
             "stage3_param_persistence_threshold": "auto"}

# TrainingArguments beyond their defaults; warmup_steps 0 (none), 7 (steps) and 0.1 (a ratio of 40 steps: 4).
ARG_SETS = {
    "defaults": {},
    "tuned": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "learning_rate": 3e-4,
              "adam_beta1": 0.8, "adam_beta2": 0.95, "adam_epsilon": 1e-6, "weight_decay": 0.01,
              "max_grad_norm": 0.5, "bf16": True},
}
WARMUPS = {"no_warmup": 0, "warmup_7": 7, "warmup_ratio_0.1": 0.1}


def all_auto_config(scheduler, stage):
    return {
        "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
        "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
        "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                  "weight_decay": "auto"}},
        "scheduler": {"type": scheduler, "params": {key: "auto" for key in SCHEDULER_PARAMS[scheduler]}},
        "zero_optimization": {"stage": stage, **ZERO_AUTO},
    }


# Explicit values that disagree with the default arguments (warmup 0, 40 steps), one key each, and one config
# whose explicit values all agree; each on the all-"auto" WarmupDecayLR stage-3 config.
MISMATCHES = {
    "micro_batch": {"train_micro_batch_size_per_gpu": 16},
    "accumulation": {"gradient_accumulation_steps": 4},
    "train_batch_size": {"train_batch_size": 64},
    "gradient_clipping": {"gradient_clipping": 0.3},
    "lr": {"optimizer.params.lr": 1e-4},
    "betas": {"optimizer.params.betas": [0.8, 0.999]},
    "eps": {"optimizer.params.eps": 1e-6},
    "weight_decay": {"optimizer.params.weight_decay": 0.1},
    "warmup_max_lr": {"scheduler.params.warmup_max_lr": 3e-4},
    "total_num_steps": {"scheduler.params.total_num_steps": 500},
    "warmup_num_steps_without_warmup": {"scheduler.params.warmup_num_steps": 50},
    "warmup_num_steps_zero": {"scheduler.params.warmup_num_steps": 0},
    "several": {"train_micro_batch_size_per_gpu": 2, "optimizer.params.lr": 1e-3,
                "scheduler.params.warmup_num_steps": 10},
    "all_agree": {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "train_batch_size": 8,
                  "gradient_clipping": 1.0, "optimizer.params.lr": 5e-5,
                  "optimizer.params.betas": [0.9, 0.999], "optimizer.params.eps": 1e-8,
                  "optimizer.params.weight_decay": 0.0, "scheduler.params.warmup_max_lr": 5e-5,
                  "scheduler.params.warmup_min_lr": 1e-7, "scheduler.params.total_num_steps": 40,
                  "scheduler.params.warmup_num_steps": 1, "bf16.enabled": False},
}


def with_values(config, values):
    config = json.loads(json.dumps(config))
    for dotted, value in values.items():
        node = config
        *parents, key = dotted.split(".")
        for parent in parents:
            node = node[parent]
        node[key] = value
    return config


def run_hf(deepspeed, args_values, world_size, out_dir):
    """HF's filled config, or its mismatch lines."""
    hf = HfTrainerDeepSpeedConfig(json.loads(json.dumps(deepspeed)))
    # TrainingArguments.world_size is a property of the process state; a subclass fixes it per case.
    cls = type("RanksArguments", (TrainingArguments,), {"world_size": property(lambda self: world_size)})
    # use_cpu: HF accepts bf16 on a machine without a GPU only then; it fills nothing differently.
    args = cls(output_dir=os.path.join(out_dir, "hf-run"), report_to=[], use_cpu=True, **args_values)
    hf.trainer_config_process(args)
    model = types.SimpleNamespace(config=BertConfig(hidden_size=HIDDEN_SIZE, num_attention_heads=4))
    try:
        hf.trainer_config_finalize(args, model, TOTAL_STEPS)
    except ValueError as error:
        lines = [line for line in str(error).splitlines() if line.startswith("- ds ")]
        if not lines:
            raise
        return None, lines
    return hf.config, []


def case(name, deepspeed, args_values, world_size, out_dir):
    filled, mismatches = run_hf(deepspeed, args_values, world_size, out_dir)
    return {"name": name, "deepspeed": deepspeed, "args": args_values, "world_size": world_size,
            "num_training_steps": TOTAL_STEPS, "hidden_size": HIDDEN_SIZE, "filled": filled,
            "mismatches": mismatches}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: deepspeed_fill_goldens.py OUT_DIR")
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    grid = itertools.product(SCHEDULER_PARAMS, (1, 2, 3), WARMUPS.items(), ARG_SETS.items(), (1, 2))
    for scheduler, stage, (warmup_name, warmup), (args_name, args_values), world in grid:
        name = f"{scheduler}_stage{stage}_{warmup_name}_{args_name}_{world}ranks"
        values = {**args_values, "warmup_steps": warmup}
        cases.append(case(name, all_auto_config(scheduler, stage), values, world, out_dir))
    for name, values in MISMATCHES.items():
        deepspeed = with_values(all_auto_config("WarmupDecayLR", 3), values)
        cases.append(case("explicit_" + name, deepspeed, {"warmup_steps": 0}, 1, out_dir))
    tmp = os.path.join(out_dir, "cases.json.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(cases, out, indent=2, sort_keys=True)
        out.write("\n")
    os.replace(tmp, os.path.join(out_dir, "cases.json"))


if __name__ == "__main__":
    main()
