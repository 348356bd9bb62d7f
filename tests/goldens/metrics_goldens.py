#!/usr/bin/env python3
# Goldens for berth's classification and regression metrics, computed by scikit-learn itself
# (scikit-learn==1.9.1, pinned in scripts/requirements.txt; sklearn.metrics) on predictions torch makes
# (torch==2.15.0: the logits' argmax). zero_division=0: a class never predicted (or never present) scores 0,
# what sklearn's default "warn" also returns.
# Usage (run with scripts/python): metrics_goldens.py OUT.json
import json
import sys

import torch
from sklearn.metrics import (accuracy_score, confusion_matrix, f1_score, mean_absolute_error, mean_squared_error,
                             precision_score, recall_score, root_mean_squared_error)


def classification(logits, labels):
    keep = labels != -100
    pred = logits.argmax(dim=1)[keep].numpy()
    truth = labels[keep].numpy()
    c = logits.shape[1]
    classes = list(range(c))  # every class counts in the macro averages, predicted or not
    out = {
        "accuracy": accuracy_score(truth, pred) if truth.size else 0.0,
        "precision_macro": precision_score(truth, pred, labels=classes, average="macro", zero_division=0),
        "recall_macro": recall_score(truth, pred, labels=classes, average="macro", zero_division=0),
        "f1_macro": f1_score(truth, pred, labels=classes, average="macro", zero_division=0),
    }
    if c == 2:
        out.update(precision=precision_score(truth, pred, pos_label=1, average="binary", zero_division=0),
                   recall=recall_score(truth, pred, pos_label=1, average="binary", zero_division=0),
                   f1=f1_score(truth, pred, pos_label=1, average="binary", zero_division=0))
    else:
        out.update(precision=out["precision_macro"], recall=out["recall_macro"], f1=out["f1_macro"])
    out = {k: float(v) for k, v in out.items()}
    # confusion[true][pred]
    return out, confusion_matrix(truth, pred, labels=classes).tolist()


def main():
    torch.manual_seed(1234)
    cases = []
    for name, n, c, ignored, skew in [
        ("binary", 64, 2, 0, 0.0),
        ("binary_ignored_rows", 50, 2, 7, 0.0),
        ("three_class", 90, 3, 0, 0.5),
        ("five_class_unpredicted", 40, 5, 3, 2.0),  # a strong bias leaves some classes never predicted
        ("binary_always_negative", 20, 2, 0, 100.0),  # precision of class 1 divides by zero: 0
    ]:
        logits = torch.randn(n, c, dtype=torch.float32)
        logits[:, 0] += skew
        labels = torch.randint(0, c, (n,))
        if ignored:
            labels[torch.randperm(n)[:ignored]] = -100
        metrics, confusion = classification(logits, labels)
        cases.append({"name": name, "logits": logits.tolist(), "labels": labels.tolist(), "metrics": metrics,
                      "confusion": confusion})
    predictions = torch.randn(33, dtype=torch.float32)
    targets = torch.randn(33, dtype=torch.float32)
    # sklearn in double, on the float32 values (as berth computes them)
    p, t = predictions.double().numpy(), targets.double().numpy()
    regression = {"predictions": predictions.tolist(), "labels": targets.tolist(),
                  "metrics": {"mse": float(mean_squared_error(t, p)), "mae": float(mean_absolute_error(t, p)),
                              "rmse": float(root_mean_squared_error(t, p))}}
    with open(sys.argv[1], "w") as f:
        json.dump({"classification": cases, "regression": regression}, f, indent=1)


if __name__ == "__main__":
    main()
