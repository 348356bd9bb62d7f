#!/usr/bin/env python3
# purpose: train goldens: training_args.json files as HF transformers' TrainingArguments (transformers==5.24.0,
# pinned in scripts/requirements.txt) writes them with to_json_string(), for fields berth implements.
#
# Usage: scripts/python tests/goldens/training_args_goldens.py OUT_DIR. Writes into OUT_DIR:
#   <name>.json    TrainingArguments(output_dir="hf-run", report_to=[], <CASES[name]>).to_json_string()
#   expected.json  per name: "set" (the arguments the case passed, as HF holds them after its __post_init__),
#                  "warmup_steps_for_total" ({total: TrainingArguments.get_warmup_steps(total)}) and
#                  "train_sampling_strategy" as HF holds it.
#   hf_fields.json {"fields": the names of dataclasses.fields(TrainingArguments), sorted}

import dataclasses
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import transformers  # noqa: E402
from transformers import TrainingArguments  # noqa: E402

CASES = {
    # Epoch-based evaluation and saves, the best model by f1, warmup as a step count.
    "training_args": dict(learning_rate=3e-5, num_train_epochs=2, per_device_train_batch_size=16,
                          per_device_eval_batch_size=32, gradient_accumulation_steps=2, warmup_steps=10,
                          weight_decay=0.01, lr_scheduler_type="cosine", eval_strategy="epoch", save_strategy="epoch",
                          save_total_limit=2, load_best_model_at_end=True, metric_for_best_model="f1",
                          logging_steps=25, seed=7, data_seed=11, max_grad_norm=0.5, adam_epsilon=1e-6),
    # Step-based, warmup and logging as ratios of the total steps (transformers 5 has no warmup_ratio: a
    # warmup_steps below 1 is one), and length-grouped batches (transformers 5's train_sampling_strategy).
    "training_args_steps": dict(learning_rate=1e-4, max_steps=120, warmup_steps=0.1, eval_strategy="steps",
                                eval_steps=20, save_steps=40, logging_steps=0.05,
                                train_sampling_strategy="group_by_length", dataloader_drop_last=True,
                                lr_scheduler_type="constant_with_warmup", ddp_timeout=600, adam_beta2=0.98),
    # A fractional warmup_steps above 1: transformers 5 takes int() of it.
    "training_args_fractional_warmup": dict(max_steps=50, warmup_steps=10.5, seed=3),
}

TOTALS = [1, 7, 100, 120, 1000]


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: training_args_goldens.py OUT_DIR")
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    os.chdir(out_dir)  # output_dir is relative: whatever TrainingArguments makes there stays in OUT_DIR
    expected = {"transformers_version": transformers.__version__}
    for name, kwargs in CASES.items():
        args = TrainingArguments(output_dir="hf-run", report_to=[], **kwargs)
        write(os.path.join(out_dir, name + ".json"), args.to_json_string())
        held = json.loads(args.to_json_string())
        expected[name] = {"set": {k: held[k] for k in ["output_dir", "report_to", *kwargs]},
                          "warmup_steps_for_total": {str(t): args.get_warmup_steps(t) for t in TOTALS},
                          "train_sampling_strategy": args.train_sampling_strategy}
    write(os.path.join(out_dir, "expected.json"), json.dumps(expected, indent=2, sort_keys=True) + "\n")
    fields = sorted(field.name for field in dataclasses.fields(TrainingArguments))
    write(os.path.join(out_dir, "hf_fields.json"), json.dumps({"fields": fields}, indent=2) + "\n")


if __name__ == "__main__":
    main()
