#!/usr/bin/env python3
# purpose: goldens for berth's seqeval_metrics from the real seqeval (1.2.2, installed from scripts/oracles.txt by
# scripts/setup): precision_score, recall_score, f1_score and accuracy_score in seqeval's default mode (what
# run_ner.py's compute_metrics reports) and get_entities, on random tag sequences and edge cases (I- without B-,
# single-token entities, an entity at the end, several types, E-/S- tags, all O, empty predictions).
#
# usage: seqeval_goldens.py OUT.json   (written to a temporary name, then renamed)
import json
import os
import random
import sys
import warnings

try:
    from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score
    from seqeval.metrics.sequence_labeling import get_entities
except ImportError:
    sys.exit("seqeval_goldens.py: seqeval is not in the venv. Fix: scripts/setup (installs scripts/oracles.txt)")

warnings.simplefilter("ignore")  # zero-division and "not a NE tag" warnings: the numbers are what counts

EDGE = [
    ([["O", "O"]], [["O", "O"]]),
    ([["B-PER", "I-PER", "O"]], [["O", "O", "O"]]),
    ([["I-PER", "I-PER", "O", "I-LOC"]], [["B-PER", "I-PER", "O", "B-LOC"]]),
    ([["B-PER"], ["O", "B-LOC"]], [["B-PER"], ["O", "B-LOC"]]),
    ([["O", "B-ORG", "I-ORG"]], [["O", "B-ORG", "I-LOC"]]),
    ([["B-A", "B-A", "I-A", "O", "B-B"]], [["B-A", "I-A", "I-A", "O", "B-B"]]),
    ([["S-A", "B-B", "E-B", "O", "I-A", "E-A"]], [["S-A", "B-B", "I-B", "E-B", "B-A", "E-A"]]),
    ([["B-NUM", "I-NUM", "I-CAP", "O"]], [["B-NUM", "I-NUM", "B-CAP", "O"]]),
    ([[]], [[]]),
]
TAGS = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "E-PER", "S-LOC", "I-X"]


def random_case(rng):
    rows = rng.randint(1, 5)
    truth, predicted = [], []
    for _ in range(rows):
        n = rng.randint(0, 12)
        t = [rng.choice(TAGS) for _ in range(n)]
        p = [tag if rng.random() < 0.7 else rng.choice(TAGS) for tag in t]
        truth.append(t)
        predicted.append(p)
    return truth, predicted


def main():
    out = sys.argv[1]
    rng = random.Random(17)
    cases = []
    for truth, predicted in EDGE + [random_case(rng) for _ in range(300)]:
        cases.append({"truth": truth, "predicted": predicted,
                      "precision": float(precision_score(truth, predicted)),
                      "recall": float(recall_score(truth, predicted)),
                      "f1": float(f1_score(truth, predicted)),
                      # seqeval divides by zero when there are no tags at all; berth reports 0 there.
                      "accuracy": float(accuracy_score(truth, predicted)) if any(truth) else 0.0,
                      "entities": [list(e) for e in get_entities(truth)]})
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(cases, f)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
