#!/usr/bin/env python3
# purpose: train goldens: the zero_optimization values HF transformers (5.24.0, pinned in
# scripts/requirements.txt) fills for "auto" in reduce_bucket_size, stage3_prefetch_bucket_size and
# stage3_param_persistence_threshold, from the model's hidden size (HfTrainerDeepSpeedConfig's
# trainer_config_process then trainer_config_finalize, run as the Trainer runs them).
#
# Usage: scripts/python tests/goldens/deepspeed_auto_goldens.py OUT_DIR. Writes OUT_DIR/cases.json: a list of
#   {"name", "model_config" (the model's config.json as HF writes it), "deepspeed" (the config given),
#    "zero_optimization" (HF's block after finalize; a key HF leaves "auto" stays "auto"),
#    "error" (true when HF refuses: a model config without a hidden size)}.

import json
import os
import sys
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from transformers import (  # noqa: E402
    BertConfig,
    DistilBertConfig,
    GPT2Config,
    LlamaConfig,
    PretrainedConfig,
    ResNetConfig,
    TrainingArguments,
)
from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig  # noqa: E402

class NoHiddenSizeConfig(PretrainedConfig):
    """A model config with a model_type (config.json always has one) and no hidden size of any spelling."""

    model_type = "no-hidden-size"


AUTO3 = {"reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
         "stage3_param_persistence_threshold": "auto"}

MODELS = {
    "bert_48": BertConfig(hidden_size=48, num_attention_heads=4, intermediate_size=96),
    "gpt2_n_embd_40": GPT2Config(n_embd=40, n_head=4),
    "distilbert_dim_36": DistilBertConfig(dim=36, n_heads=4, hidden_dim=72),
    "llama_4096": LlamaConfig(hidden_size=4096),
    "bert_base_768": BertConfig(),
    "resnet_hidden_sizes": ResNetConfig(hidden_sizes=[16, 72, 40]),
    "no_hidden_size": NoHiddenSizeConfig(),
}

CASES = [
    # (name, model, zero_optimization block)
    ("stage3_all_auto", "bert_48", {"stage": 3, **AUTO3}),
    ("stage2_all_auto", "bert_48", {"stage": 2, **AUTO3}),
    ("stage3_gpt2", "gpt2_n_embd_40", {"stage": 3, **AUTO3}),
    ("stage3_distilbert", "distilbert_dim_36", {"stage": 3, **AUTO3}),
    ("stage3_llama", "llama_4096", {"stage": 3, **AUTO3}),
    ("stage3_bert_base", "bert_base_768", {"stage": 3, **AUTO3}),
    ("stage3_hidden_sizes", "resnet_hidden_sizes", {"stage": 3, **AUTO3}),
    ("stage3_mixed", "bert_48", {"stage": 3, "reduce_bucket_size": 5000, "stage3_prefetch_bucket_size": "auto",
                                 "stage3_param_persistence_threshold": 7}),
    ("stage2_reduce_only", "bert_base_768", {"stage": 2, "reduce_bucket_size": "auto"}),
    ("stage3_no_hidden_size", "no_hidden_size", {"stage": 3, **AUTO3}),
]


def finalize(deepspeed, model_config, out_dir):
    hf = HfTrainerDeepSpeedConfig(json.loads(json.dumps(deepspeed)))
    args = TrainingArguments(output_dir=os.path.join(out_dir, "hf-run"), report_to=[])
    hf.trainer_config_process(args)
    hf.trainer_config_finalize(args, types.SimpleNamespace(config=model_config), 100)
    return hf.config["zero_optimization"]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: deepspeed_auto_goldens.py OUT_DIR")
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for name, model, zero in CASES:
        deepspeed = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": zero}
        config = MODELS[model]
        case = {"name": name, "model_config": json.loads(config.to_json_string()), "deepspeed": deepspeed}
        try:
            case["zero_optimization"] = finalize(deepspeed, config, out_dir)
            case["error"] = False
        except ValueError:
            case["error"] = True
        cases.append(case)
    tmp = os.path.join(out_dir, "cases.json.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(cases, out, indent=2, sort_keys=True)
        out.write("\n")
    os.replace(tmp, os.path.join(out_dir, "cases.json"))


if __name__ == "__main__":
    main()
