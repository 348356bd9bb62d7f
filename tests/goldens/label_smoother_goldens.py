#!/usr/bin/env python3
# purpose: goldens for label_smoothing_factor, computed by HF's own LabelSmoother
# (transformers.trainer_pt_utils.LabelSmoother, as the Trainer calls it: shift_labels=True for causal LMs)
# on random logits and labels with -100 ignored positions.
#
# Usage: label_smoother_goldens.py OUT_JSON (run with scripts/python). Writes a JSON list of cases:
#   {"name", "epsilon", "shift_labels", "logits": {"shape", "values"}, "labels": {"shape", "values"},
#    "loss": LabelSmoother's float32 result}
import json
import sys

import torch
from transformers.trainer_pt_utils import LabelSmoother

# (name, logits shape, ignored fraction, epsilon, shift_labels)
CASES = [
    ("sequence_classification", (7, 3), 0.0, 0.1, False),
    ("sequence_classification_eps_0.3", (7, 5), 0.0, 0.3, False),
    ("token_classification", (3, 6, 4), 0.3, 0.1, False),
    ("masked_lm", (2, 8, 11), 0.7, 0.2, False),
    ("causal_lm", (2, 7, 13), 0.2, 0.1, True),
    ("causal_lm_all_but_one_ignored", (1, 5, 6), 0.0, 0.1, True),
]


def case(name, shape, ignored, epsilon, shift):
    g = torch.Generator().manual_seed(len(name) * 7919 + len(shape))
    logits = 3 * torch.randn(shape, generator=g, dtype=torch.float32)
    labels = torch.randint(0, shape[-1], shape[:-1], generator=g)
    if ignored > 0:
        labels[torch.rand(shape[:-1], generator=g) < ignored] = -100
    if name == "causal_lm_all_but_one_ignored":
        labels[:] = -100
        labels[0, 3] = 2
    loss = LabelSmoother(epsilon=epsilon)({"logits": logits}, labels, shift_labels=shift)
    return {"name": name, "epsilon": epsilon, "shift_labels": shift,
            "logits": {"shape": list(shape), "values": logits.reshape(-1).tolist()},
            "labels": {"shape": list(labels.shape), "values": labels.reshape(-1).tolist()},
            "loss": loss.item()}


def main():
    with open(sys.argv[1], "w") as f:
        json.dump([case(*c) for c in CASES], f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
