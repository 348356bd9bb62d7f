# Goldens for berth's classification and regression metrics: sklearn's definitions computed with torch ops.
# Usage: metrics_goldens.py OUT.json
import json
import sys

import torch


def classification(logits, labels):
    keep = labels != -100
    pred = logits.argmax(dim=1)[keep]
    truth = labels[keep]
    c = logits.shape[1]
    # confusion[true][pred] via bincount of true * C + pred
    confusion = torch.bincount(truth * c + pred, minlength=c * c).reshape(c, c)
    tp = confusion.diag().double()
    predicted = confusion.sum(dim=0).double()
    actual = confusion.sum(dim=1).double()
    precision = torch.where(predicted > 0, tp / predicted.clamp(min=1), torch.zeros_like(tp))
    recall = torch.where(actual > 0, tp / actual.clamp(min=1), torch.zeros_like(tp))
    denom = precision + recall
    f1 = torch.where(denom > 0, 2 * precision * recall / denom.clamp(min=1e-300), torch.zeros_like(tp))
    out = {
        "accuracy": (pred == truth).double().mean().item() if truth.numel() else 0.0,
        "precision_macro": precision.mean().item(),
        "recall_macro": recall.mean().item(),
        "f1_macro": f1.mean().item(),
    }
    if c == 2:
        out.update(precision=precision[1].item(), recall=recall[1].item(), f1=f1[1].item())
    else:
        out.update(precision=out["precision_macro"], recall=out["recall_macro"], f1=out["f1_macro"])
    return out, confusion.tolist()


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
    diff = predictions.double() - targets.double()
    mse = diff.pow(2).mean().item()
    regression = {"predictions": predictions.tolist(), "labels": targets.tolist(),
                  "metrics": {"mse": mse, "mae": diff.abs().mean().item(), "rmse": mse ** 0.5}}
    with open(sys.argv[1], "w") as f:
        json.dump({"classification": cases, "regression": regression}, f, indent=1)


if __name__ == "__main__":
    main()
