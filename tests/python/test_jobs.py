"""berth.evaluate_model and berth.predict_file: `berth eval` and `berth predict` as calls, giving what the
commands give (here for a question-answering model, the tiny DistilBERT of the goldens)."""

import json
import os

import pytest

import berth
from conftest import GOLDEN_DIR, run_cli, write_jsonl


def qa_model_dir():
    path = os.path.join(GOLDEN_DIR, "question_answering", "distilbert_tiny")
    if not os.path.isdir(path):
        pytest.skip(f"no goldens at {path} (ctest sets BERTH_GOLDEN_DIR)")
    return path


def qa_rows(rows, labeled=True):
    """One sentence around a two-digit number per row (tests/cli/question_answering_cli_test.cpp's corpus);
    every third context long enough for several windows."""
    out = []
    for i in range(rows):
        before = ["Anna counted ", "the parcel carried ", "our team sold "][i % 3]
        number = str(10 + (7 * i) % 90)
        context = before + number + " apples yesterday."
        if i % 3 == 0:
            context += " Nobody said much about it later, and the weather stayed grey all week long."
        row = {"id": f"q{i}", "question": "What is the number?", "context": context}
        if labeled:
            row["answers"] = {"text": [number], "answer_start": [len(before)]}
        out.append(row)
    return out


def test_evaluate_model_returns_the_metrics_berth_eval_writes(tmp_path):
    evaluation = write_jsonl(tmp_path / "eval.jsonl", qa_rows(12))
    run_cli(["eval", "--model", qa_model_dir(), "--eval", evaluation, "--max-length", "24", "--batch-size", "4",
             "--output", str(tmp_path / "cli.json")])
    with open(tmp_path / "cli.json") as f:
        cli = json.load(f)
    metrics = berth.evaluate_model(qa_model_dir(), eval_file=tmp_path / "eval.jsonl", max_length=24,
                                   batch_size=4)
    assert sorted(metrics) == sorted(cli)
    assert {"eval_loss", "eval_exact_match", "eval_f1"} <= set(metrics)
    for name, value in cli.items():
        if name.endswith(("_runtime", "_per_second")):  # timings, not results
            continue
        assert metrics[name] == pytest.approx(value, rel=1e-5, abs=1e-9), name


def test_predict_file_writes_one_answer_per_question(tmp_path):
    questions = write_jsonl(tmp_path / "questions.jsonl", qa_rows(5, labeled=False))
    count = berth.predict_file(qa_model_dir(), questions, tmp_path / "answers.jsonl", max_length=24)
    assert count == 5
    with open(tmp_path / "answers.jsonl") as f:
        answers = [json.loads(line) for line in f]
    assert [a["id"] for a in answers] == [f"q{i}" for i in range(5)]
    assert all({"answer", "start", "end", "score"} <= set(a) for a in answers)


def test_evaluate_model_without_a_file_names_the_fix():
    with pytest.raises(berth.Error, match="nothing to evaluate on. Fix: --eval FILE or --test FILE"):
        berth.evaluate_model(qa_model_dir())
