"""berth.Trainer's evaluate(eval_dataset=FILE) and predict(FILE) for the tasks whose files are not plain texts:
a token classifier reads a later file of words and tags as it read its own eval split (the same metrics),
and a question-answering job refuses one with the fix."""

import random

import pytest

import berth
from conftest import PRESET_OVERRIDES, tiny_bert_dir, write_jsonl
from test_jobs import qa_model_dir, qa_rows


def tagged_rows(rows, seed):
    """Words tagged by a rule a tiny model can learn: names B-CAP, numbers B-NUM, the rest O."""
    rng = random.Random(seed)
    words = {"O": ["the", "cat", "sat", "on", "a", "mat"], "B-CAP": ["Alice", "Paris"], "B-NUM": ["12", "7"]}
    out = []
    for _ in range(rows):
        tags = [rng.choice(["O", "O", "B-CAP", "B-NUM"]) for _ in range(rng.randint(3, 7))]
        out.append({"tokens": [rng.choice(words[t]) for t in tags], "ner_tags": tags})
    return out


def test_a_later_file_of_tagged_words_is_evaluated_as_the_jobs_own_split(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", tagged_rows(16, 1))
    evaluation = write_jsonl(tmp_path / "eval.jsonl", tagged_rows(9, 2))
    args = berth.TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=8,
                                   max_length=16, save_strategy="no", disable_tqdm=True, threads=1, seed=3)
    trainer = berth.Trainer(model="bert-tiny", tokenizer=tiny_bert_dir(), config_overrides=PRESET_OVERRIDES,
                            args=args, train_dataset=train, eval_dataset=evaluation, task="token-classification")
    trainer.train()
    own = trainer.evaluate()
    later = trainer.evaluate(eval_dataset=evaluation)
    assert {"eval_loss", "eval_f1", "eval_accuracy"} <= set(own)
    assert sorted(later) == sorted(own)
    for name, value in own.items():
        if not name.endswith(("_runtime", "_per_second", "_epoch")):  # timings, not results
            assert later[name] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    prediction = trainer.predict(evaluation)
    assert prediction.predictions.shape[0] == 9 and prediction.predictions.shape[2] == 3  # (N, T, labels)
    assert prediction.metrics["test_loss"] == pytest.approx(own["eval_loss"], rel=1e-6)


def test_a_question_answering_job_refuses_a_later_file_with_the_fix(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", qa_rows(6))
    evaluation = write_jsonl(tmp_path / "eval.jsonl", qa_rows(4))
    args = berth.TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=1, max_length=24,
                                   save_strategy="no", disable_tqdm=True, threads=1)
    trainer = berth.Trainer(model=qa_model_dir(), args=args, train_dataset=train, eval_dataset=evaluation,
                            task="question-answering")
    assert "eval_f1" in trainer.evaluate()  # the job's own split is scored
    with pytest.raises(berth.Error) as error:
        trainer.evaluate(eval_dataset=evaluation)
    text = str(error.value)
    assert "question answering scores its answers against the examples of the splits the job loaded" in text
    assert "Fix: pass the file as the job's eval_dataset (--eval FILE)" in text
