#!/usr/bin/env python3
# purpose: optim goldens, computed by the libraries themselves (torch==2.15.0, transformers==5.24.0 with
# accelerate==1.15.0, pinned in scripts/requirements.txt): torch.optim.AdamW with HF Trainer's two param groups,
# HF's lr schedules (transformers.get_scheduler: the LambdaLR schedules of transformers/optimization.py),
# torch.nn.utils.clip_grad_norm_, and the decay / no-decay groups a real transformers.Trainer's
# create_optimizer() makes (Trainer.get_decay_parameter_names) for a tiny BERT.
#
# Usage: optim_goldens.py OUT_DIR (run with scripts/python). The tiny BERT is transformers' own
# BertForSequenceClassification (bert_goldens.py builds it). Writes, as JSON (float values as exact decimal
# doubles):
#   adamw.json         per dtype (float32, float64): initial params, groups, and per step the grads given and
#                      the params after torch.optim.AdamW's step (a param with no grad in a step is skipped)
#   schedulers.json    per case: the schedule's options and the lr of each of the first optimizer steps
#   clip_grad.json     per case: grads, max_norm, the returned total norm and the clipped grads
#   param_groups.json  the tiny BertForSequenceClassification's config and HF's decay / no-decay names
import json
import os
import sys
import tempfile

import torch
import transformers
from torch import nn

sys.dont_write_bytecode = True  # no __pycache__ in the source tree for the import below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_goldens  # noqa: E402  (builds transformers' BertForSequenceClassification from a tiny config)


def values(t):
    return t.detach().reshape(-1).tolist()


def tensor_json(t):
    return {"shape": list(t.shape), "values": values(t)}


# ---- AdamW -------------------------------------------------------------------------------------------------

ADAMW_SHAPES = [  # a model-like set: 2-D weights, biases, a LayerNorm weight and bias, an embedding
    ("embeddings.weight", (6, 4)),
    ("dense.weight", (5, 4)),
    ("dense.bias", (5,)),
    ("LayerNorm.weight", (5,)),
    ("LayerNorm.bias", (5,)),
    ("classifier.weight", (3, 5)),
    ("classifier.bias", (3,)),
]
DECAY = ["embeddings.weight", "dense.weight", "classifier.weight"]
NO_DECAY = ["dense.bias", "LayerNorm.weight", "LayerNorm.bias", "classifier.bias"]
STEPS = 5
SKIPPED = {2: "classifier.bias", 3: "dense.weight"}  # step -> a param whose grad is None in that step


def adamw_case(dtype):
    g = torch.Generator().manual_seed(1234)
    params = {}
    for name, shape in ADAMW_SHAPES:
        params[name] = nn.Parameter(torch.randn(shape, generator=g, dtype=torch.float64).to(dtype))
        if name == "LayerNorm.weight":
            with torch.no_grad():
                params[name].add_(1.0)
    initial = {name: tensor_json(p) for name, p in params.items()}
    hp = {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
    optimizer = torch.optim.AdamW(
        [
            {"params": [params[n] for n in DECAY], "weight_decay": hp["weight_decay"]},
            {"params": [params[n] for n in NO_DECAY], "weight_decay": 0.0},
        ],
        lr=hp["lr"], betas=hp["betas"], eps=hp["eps"], foreach=False)
    steps = []
    for step in range(STEPS):
        grads = {}
        for name, p in params.items():
            if SKIPPED.get(step) == name:
                p.grad = None
                continue
            # Grads of very different sizes, so eps and the bias corrections matter.
            scale = 10.0 ** (step % 3 - 1)
            grad = (scale * torch.randn(p.shape, generator=g, dtype=torch.float64)).to(dtype)
            p.grad = grad
            grads[name] = tensor_json(grad)
        optimizer.step()
        steps.append({"grads": grads, "params": {name: tensor_json(p) for name, p in params.items()}})
    return {
        "lr": hp["lr"], "beta1": hp["betas"][0], "beta2": hp["betas"][1], "eps": hp["eps"],
        "weight_decay": hp["weight_decay"], "decay": DECAY, "no_decay": NO_DECAY,
        "initial": initial, "steps": steps,
    }


# ---- schedules: transformers.get_scheduler (transformers/optimization.py) --------------------------------------

def get_schedule(optimizer, kind, warmup, total, num_cycles, lr_end, power):
    # As Trainer.create_scheduler calls it; lr_scheduler_kwargs only for the schedules that take them.
    specific = {"cosine": {"num_cycles": num_cycles}, "polynomial": {"lr_end": lr_end, "power": power}}
    return transformers.get_scheduler(kind, optimizer, num_warmup_steps=warmup, num_training_steps=total,
                                      scheduler_specific_kwargs=specific.get(kind))


def scheduler_cases():
    cases = []
    specs = [
        ("linear", 5, 30, 0.5, 1e-7, 1.0),
        ("linear", 0, 30, 0.5, 1e-7, 1.0),
        ("cosine", 5, 30, 0.5, 1e-7, 1.0),
        ("cosine", 5, 30, 2.0, 1e-7, 1.0),
        ("constant", 5, 30, 0.5, 1e-7, 1.0),
        ("constant_with_warmup", 5, 30, 0.5, 1e-7, 1.0),
        ("polynomial", 5, 30, 0.5, 1e-7, 1.0),
        ("polynomial", 5, 30, 0.5, 1e-5, 2.0),
    ]
    for kind, warmup, total, num_cycles, lr_end, power in specs:
        base_lr = 5e-4
        p = nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.AdamW([p], lr=base_lr)
        scheduler = get_schedule(optimizer, kind, warmup, total, num_cycles, lr_end, power)
        lrs = []
        for _ in range(total + 5):  # a few steps past the end
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        cases.append({"type": kind, "base_lr": base_lr, "warmup_steps": warmup, "total_steps": total,
                      "num_cycles": num_cycles, "lr_end": lr_end, "power": power, "lrs": lrs})
    return cases


# ---- clip_grad_norm_ ----------------------------------------------------------------------------------------

def clip_cases():
    g = torch.Generator().manual_seed(99)
    cases = []
    for name, max_norm, scale, dtype in [("clips", 1.0, 3.0, torch.float32), ("keeps", 100.0, 1.0, torch.float32),
                                         ("clips_float64", 0.5, 2.0, torch.float64)]:
        shapes = [(7, 3), (3,), (4, 4, 2)]
        params = [nn.Parameter(torch.zeros(s, dtype=dtype)) for s in shapes]
        grads = [(scale * torch.randn(s, generator=g, dtype=torch.float64)).to(dtype) for s in shapes]
        for p, grad in zip(params, grads):
            p.grad = grad.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        cases.append({"name": name, "dtype": str(dtype).replace("torch.", ""), "max_norm": max_norm,
                      "grads": [tensor_json(t) for t in grads], "norm": norm.item(),
                      "clipped": [tensor_json(p.grad) for p in params]})
    return cases


# ---- HF's decay / no-decay groups: a real Trainer's create_optimizer() ----------------------------------------

def param_groups_case():
    config = bert_goldens.base_config(num_hidden_layers=2)
    model = bert_goldens.build_classifier(config)
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(output_dir=out, weight_decay=0.01, use_cpu=True, report_to="none")
        trainer = transformers.Trainer(model=model, args=args)
        optimizer = trainer.create_optimizer()
    # Trainer.create_optimizer: [decay group (args.weight_decay), no-decay group (0.0)], params in
    # named_parameters() order, only those that require grad.
    assert len(optimizer.param_groups) == 2, optimizer.param_groups
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.01, 0.0], optimizer.param_groups
    names = {id(p): n for n, p in model.named_parameters()}
    decay, no_decay = ([names[id(p)] for p in g["params"]] for g in optimizer.param_groups)
    assert set(decay) == set(trainer.get_decay_parameter_names(model)), decay
    assert decay + no_decay == [n for n in names.values() if n in decay] + [n for n in names.values() if n in no_decay]
    keys = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "max_position_embeddings", "type_vocab_size"]
    return {"config": {k: config[k] for k in keys}, "decay": decay, "no_decay": no_decay}


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(value, out)
    os.replace(tmp, path)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "adamw.json"),
               {"float32": adamw_case(torch.float32), "float64": adamw_case(torch.float64)})
    write_json(os.path.join(out_dir, "schedulers.json"), scheduler_cases())
    write_json(os.path.join(out_dir, "clip_grad.json"), clip_cases())
    write_json(os.path.join(out_dir, "param_groups.json"), param_groups_case())


if __name__ == "__main__":
    main()
