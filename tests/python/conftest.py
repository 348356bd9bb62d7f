"""Shared fixtures of the Python front end's tests (run by ctest as python.<file>, PYTHONPATH=build/python)."""

import json
import os
import subprocess

import pytest

GOLDEN_DIR = os.environ.get("BERTH_GOLDEN_DIR", "")
BERTH_CLI = os.environ.get("BERTH_CLI", "")


def tiny_bert_dir():
    """The tiny BERT classifier the goldens build (its tokenizer serves every preset here)."""
    path = os.path.join(GOLDEN_DIR, "tiny_bert_classifier")
    if not os.path.isdir(path):
        pytest.skip(f"no goldens at {path} (ctest sets BERTH_GOLDEN_DIR)")
    return path


def spam_ham_rows(rows, offset):
    """Ham and spam sentences of different lengths from words the tiny model's vocabulary knows (the rows
    tests/support/training_runs.h's write_spam_ham_split writes)."""
    spam = ["free prize click here now", "win cash offer", "cheap loans click now click now free"]
    ham = ["meeting tomorrow review report", "the build is green",
           "please review the attached report before the meeting tomorrow"]
    out = []
    for i in range(rows):
        is_spam = (i + offset) % 2 == 0
        pool = spam if is_spam else ham
        out.append({"text": pool[(i // 2 + offset) % len(pool)], "label": "spam" if is_spam else "ham"})
    return out


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return str(path)


# bert-tiny without dropout (two runs, or ranks, draw no different masks), as training_runs.h's Bert family.
PRESET_OVERRIDES = "max_position_embeddings=64,hidden_dropout_prob=0,attention_probs_dropout_prob=0"


def run_cli(args, env=None, timeout=300):
    if not os.path.exists(BERTH_CLI):
        pytest.skip("no berth CLI (ctest sets BERTH_CLI)")
    result = subprocess.run([BERTH_CLI] + args, capture_output=True, text=True, env=env, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result
