#!/usr/bin/env python3
# purpose: AdamW kernel goldens: torch.optim.AdamW (float32, single-tensor path) on odd lengths, both weight
# decays, denormal, huge and mixed-magnitude gradients, for berth's fused CPU kernel
# (tests/optim/adamw_kernel_test.cpp). Computed by PyTorch itself (torch==2.15.0, pinned in
# scripts/requirements.txt); the tensors are saved with safetensors.torch.save_file (safetensors==0.8.0).
#
# Usage: adamw_kernel_goldens.py OUT_DIR (run with scripts/python).
# Inputs are not stored: params and grads come from an integer hash both sides compute exactly (see
# hashed_values; the test re-states it), so a million-element case costs only its outputs. Writes:
#   adamw_kernel.json          hyper-parameters, and per case: name, n, weight_decay, grad kind, steps, stored steps
#   adamw_kernel.safetensors   per case and stored step: "<case>/<step>/p", ".../m", ".../v" (float32, (n,))
import json
import os
import sys

import safetensors.torch
import torch

M32 = 0xFFFFFFFF
MUL = 73244475  # < 2^31: every product below stays under 2^63 in int64


def mix(x):
    for _ in range(3):
        x = x ^ (x >> 16)
        x = (x * MUL) & M32
    return x ^ (x >> 16)


def hashed_values(n, salt, kind):
    """(n,) float32: a 24-bit signed mantissa in [-1, 1) times 2^exponent, exponent by `kind`, exact in double
    and rounded once to float32 (denormals included) exactly as C++'s static_cast<float>(double) does."""
    i = torch.arange(n, dtype=torch.int64)
    x = mix((i * 2654435 + salt * 1013904223) & M32)
    mantissa = ((x & 0xFFFFFF) - (1 << 23)).to(torch.float64) / float(1 << 23)
    e = (x >> 24) & 0xFF
    if kind == "param":
        exponent = torch.zeros_like(e)
    elif kind == "normal":
        exponent = -8 + (e % 8)  # 2^-8 .. 2^-1
    elif kind == "tiny":
        exponent = -150 + (e % 30)  # denormals, and values that round to 0 or to the smallest normals
    elif kind == "large":
        exponent = 50 + (e % 40)  # up to ~6e26: (1-b2)*g*g overflows to inf for |g| > ~5.8e20
    elif kind == "mixed":
        exponent = -150 + (e % 240)  # everything from denormals to ~1e27
    else:
        raise ValueError(kind)
    return (mantissa * torch.pow(2.0, exponent.to(torch.float64))).to(torch.float32)


HP = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}


def cases():
    out = []
    for n in [1, 7, 8, 15, 33]:
        for wd in [0.0, 0.01]:
            out.append({"name": f"n{n}_wd{wd}", "n": n, "weight_decay": wd, "kind": "normal", "steps": 4})
    for kind in ["tiny", "large", "mixed"]:
        out.append({"name": f"{kind}_grads", "n": 1000, "weight_decay": 0.01, "kind": kind, "steps": 3})
    out.append({"name": "n1000003", "n": 1000003, "weight_decay": 0.01, "kind": "normal", "steps": 3})
    for index, case in enumerate(out):
        case["salt"] = 17 * index + 1
        # the million-element case stores only its last step (12 MB instead of 36 MB)
        case["stored_steps"] = [case["steps"]] if case["n"] > 100000 else list(range(1, case["steps"] + 1))
    return out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    tensors = {}
    all_cases = cases()
    for case in all_cases:
        p = torch.nn.Parameter(hashed_values(case["n"], case["salt"], "param"))
        optimizer = torch.optim.AdamW([p], lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"],
                                      weight_decay=case["weight_decay"], foreach=False)
        for step in range(1, case["steps"] + 1):
            p.grad = hashed_values(case["n"], case["salt"] + step, case["kind"])
            optimizer.step()
            if step in case["stored_steps"]:
                state = optimizer.state[p]
                prefix = f"{case['name']}/{step}/"
                tensors[prefix + "p"] = p.detach().clone()
                tensors[prefix + "m"] = state["exp_avg"].clone()
                tensors[prefix + "v"] = state["exp_avg_sq"].clone()
    safetensors.torch.save_file(tensors, os.path.join(out_dir, "adamw_kernel.safetensors"))
    with open(os.path.join(out_dir, "adamw_kernel.json"), "w") as f:
        json.dump({"torch": torch.__version__, **HP, "cases": all_cases}, f, indent=1)


if __name__ == "__main__":
    main()
