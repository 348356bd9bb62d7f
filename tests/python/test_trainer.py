"""berth.Trainer: the same weights as `berth train` with the same arguments (bit for bit on CPU), and Python
compute_metrics and callbacks that see what HF's would."""

import json
import os

import pytest
import torch

import berth
from conftest import PRESET_OVERRIDES, run_cli, spam_ham_rows, tiny_bert_dir, write_jsonl

safetensors_torch = pytest.importorskip("safetensors.torch")

# The arguments both runs take: accumulation, clipping, warmup and a schedule, so that equality means the
# same loop, not only the same first step.
ARGS = dict(per_device_train_batch_size=4, gradient_accumulation_steps=2, max_grad_norm=0.05,
            learning_rate=1e-3, max_steps=4, warmup_steps=1, save_strategy="no", max_length=32, seed=7,
            disable_tqdm=True, threads=1, logging_steps=2, report_to=["jsonl"])


def cli_flags(args):
    flags = []
    for name, value in args.items():
        if isinstance(value, list):
            value = ",".join(value)
        flags += ["--" + name.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
    return flags


def python_trainer(tmp_path, out, overrides=None, **extra):
    args = berth.TrainingArguments(output_dir=str(out), **dict(ARGS, **(overrides or {})))
    return berth.Trainer(model="bert-tiny", tokenizer=tiny_bert_dir(), config_overrides=PRESET_OVERRIDES, args=args,
                         train_dataset=spam_ham_rows(24, 0), eval_dataset=spam_ham_rows(10, 1), **extra)


def test_python_trainer_trains_the_weights_berth_train_trains(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", spam_ham_rows(24, 0))
    evaluation = write_jsonl(tmp_path / "eval.jsonl", spam_ham_rows(10, 1))
    run_cli(["train", "--model-preset", "bert-tiny", "--tokenizer", tiny_bert_dir(), "--config-overrides",
             PRESET_OVERRIDES, "--train", train, "--eval", evaluation, "--output-dir", str(tmp_path / "cli")]
            + cli_flags(ARGS))
    trainer = python_trainer(tmp_path, tmp_path / "py")
    result = trainer.train()
    assert result.global_step == ARGS["max_steps"]
    cli = safetensors_torch.load_file(str(tmp_path / "cli" / "model.safetensors"))
    ours = safetensors_torch.load_file(str(tmp_path / "py" / "model.safetensors"))
    assert sorted(cli) == sorted(ours)
    for name in cli:
        assert torch.equal(cli[name], ours[name]), name
    # The run trained (equal weights are no accident): the classifier moved from the seeded start.
    python_trainer(tmp_path, tmp_path / "still", {"learning_rate": 1e-12}).train()
    still = safetensors_torch.load_file(str(tmp_path / "still" / "model.safetensors"))
    assert (ours["classifier.weight"] - still["classifier.weight"]).abs().max() > 1e-4
    with open(tmp_path / "cli" / "train_results.json") as f:
        assert json.load(f)["train_loss"] == pytest.approx(result.training_loss, rel=1e-6)


class Recorder(berth.TrainerCallback):
    """Records what HF's callbacks receive; stops the run after `stop_at` steps through the control."""

    def __init__(self, stop_at=None):
        self.steps, self.logs, self.evaluations, self.events = [], [], [], []
        self.stop_at = stop_at

    def on_train_begin(self, args, state, control, **kwargs):
        self.events.append(("train_begin", args.output_dir, state.max_steps))

    def on_step_end(self, args, state, control, **kwargs):
        self.steps.append((state.global_step, state.epoch))
        if self.stop_at and state.global_step >= self.stop_at:
            control.should_training_stop = True
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs))

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.evaluations.append(dict(metrics))


def test_compute_metrics_and_callbacks_see_what_hf_passes(tmp_path):
    transformers = pytest.importorskip("transformers")
    seen = []

    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        seen.append((logits, labels))
        return {"agreement": float((logits.argmax(-1) == labels).mean())}

    recorder = Recorder()
    trainer = python_trainer(tmp_path, tmp_path / "out", compute_metrics=compute_metrics, callbacks=[recorder])
    trainer.train()
    metrics = trainer.evaluate()
    # HF's EvalPrediction: numpy logits (N, num_labels) and label ids (N,) of the eval set, in order.
    logits, labels = seen[-1]
    assert logits.shape == (10, 2) and labels.shape == (10,)
    assert metrics["eval_agreement"] == pytest.approx(float((logits.argmax(-1) == labels).mean()))
    assert metrics["eval_accuracy"] == pytest.approx(metrics["eval_agreement"])
    # HF's own Trainer.evaluate on the saved model hands its compute_metrics the same arrays.
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "out")).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "out"))
    rows = spam_ham_rows(10, 1)
    label2id = model.config.label2id
    features = [dict(tokenizer(row["text"], truncation=True, max_length=32), labels=label2id[row["label"]])
                for row in rows]
    hf_seen = []

    def hf_compute_metrics(eval_pred):
        hf_seen.append((eval_pred.predictions, eval_pred.label_ids))
        return {}

    hf_args = transformers.TrainingArguments(output_dir=str(tmp_path / "hf"), per_device_eval_batch_size=8,
                                             report_to="none", use_cpu=True)
    transformers.Trainer(model=model, args=hf_args, eval_dataset=features, processing_class=tokenizer,
                         compute_metrics=hf_compute_metrics).evaluate()
    hf_logits, hf_labels = hf_seen[-1]
    assert type(hf_logits) is type(logits) and hf_logits.shape == logits.shape
    assert hf_logits.dtype == logits.dtype and hf_labels.dtype == labels.dtype
    assert abs(hf_logits - logits).max() < 1e-5  # float32 logits of a tiny model, padded differently
    assert (hf_labels == labels).all()
    # Callbacks: every step in order, HF's state fields, the logs every logging_steps, the metrics.
    assert [s for s, _ in recorder.steps] == [1, 2, 3, 4]
    assert recorder.events == [("train_begin", str(tmp_path / "out"), 4)]
    losses = [log for log in recorder.logs if "loss" in log]
    assert [log["step"] for log in losses] == [2, 4]
    assert all("learning_rate" in log and "grad_norm" in log for log in losses)
    assert recorder.evaluations[-1]["eval_agreement"] == metrics["eval_agreement"]
    # predict(): HF's PredictionOutput over a list of dicts.
    prediction = trainer.predict(rows, metric_key_prefix="test")
    assert prediction.predictions.shape == (10, 2) and prediction.label_ids.shape == (10,)
    assert abs(prediction.predictions - logits).max() < 1e-6
    assert "test_accuracy" in prediction.metrics and "test_agreement" in prediction.metrics


def test_a_callback_stops_the_run_through_the_control(tmp_path):
    recorder = Recorder(stop_at=3)
    trainer = python_trainer(tmp_path, tmp_path / "out", callbacks=[recorder])
    assert trainer.train().global_step == 3
    assert [s for s, _ in recorder.steps] == [1, 2, 3]


def test_a_dataset_like_object_and_a_csv_path_are_read(tmp_path):
    class DatasetLike:  # HF datasets.Dataset's to_list / column_names, without the datasets package
        column_names = ["text", "label"]

        def __init__(self, rows):
            self.rows = rows

        def to_list(self):
            return list(self.rows)

    csv = tmp_path / "eval.csv"
    csv.write_text("text,label\n" + "".join(f"{r['text']},{r['label']}\n" for r in spam_ham_rows(6, 1)))
    args = berth.TrainingArguments(output_dir=str(tmp_path / "out"), **ARGS)
    trainer = berth.Trainer(model="bert-tiny", tokenizer=tiny_bert_dir(), config_overrides=PRESET_OVERRIDES,
                            args=args, train_dataset=DatasetLike(spam_ham_rows(24, 0)), eval_dataset=str(csv))
    trainer.train()
    assert sorted(trainer.labels) == ["ham", "spam"]
    assert "eval_loss" in trainer.evaluate()
    trainer.save_model(str(tmp_path / "saved"))
    assert os.path.exists(tmp_path / "saved" / "model.safetensors")


def test_bad_input_raises_berth_error_with_the_fix(tmp_path):
    with pytest.raises(berth.Error) as raised:
        berth.Trainer(model="no-such-preset", tokenizer=tiny_bert_dir(),
                      args=berth.TrainingArguments(output_dir=str(tmp_path / "out")),
                      train_dataset=spam_ham_rows(4, 0))
    assert "no-such-preset" in str(raised.value) and "Fix" in str(raised.value)
    with pytest.raises(berth.Error) as raised:
        berth.Trainer(model=torch.nn.Linear(2, 2), args=berth.TrainingArguments(output_dir=str(tmp_path)))
    assert "Fix:" in str(raised.value)


def test_a_transformers_model_is_trained_in_place(tmp_path):
    """model=PreTrainedModel: berth trains the module's own tensors (no copy), to the weights training its
    folder gives, bit for bit."""
    transformers = pytest.importorskip("transformers")
    directory = tiny_bert_dir()
    module = transformers.AutoModelForSequenceClassification.from_pretrained(directory)
    start = {name: t.detach().clone() for name, t in module.state_dict().items()}
    storage = {name: t.data_ptr() for name, t in module.state_dict().items()}
    data = dict(train_dataset=spam_ham_rows(24, 0), eval_dataset=spam_ham_rows(10, 1))
    trainer = berth.Trainer(model=module, args=berth.TrainingArguments(output_dir=str(tmp_path / "module"), **ARGS),
                            **data)  # the tokenizer: the folder the module was loaded from
    assert trainer.model is module
    trainer.train()
    berth.Trainer(model=directory, args=berth.TrainingArguments(output_dir=str(tmp_path / "dir"), **ARGS),
                  **data).train()
    from_dir = safetensors_torch.load_file(str(tmp_path / "dir" / "model.safetensors"))
    after = module.state_dict()
    for name, tensor in from_dir.items():
        assert torch.equal(after[name], tensor), name
        assert after[name].data_ptr() == storage[name], name  # trained where it lay
    assert (after["classifier.weight"] - start["classifier.weight"]).abs().max() > 1e-4
    # The module is still transformers' model: its forward gives the logits of the trained weights.
    batch = transformers.AutoTokenizer.from_pretrained(directory)("the build is green", return_tensors="pt")
    reloaded = transformers.AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "dir"))
    with torch.no_grad():
        assert torch.allclose(module.eval()(**batch).logits, reloaded.eval()(**batch).logits, atol=1e-6)


def test_a_module_berth_cannot_train_in_place_is_refused_with_the_fix(tmp_path):
    transformers = pytest.importorskip("transformers")
    module = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_bert_dir())
    args = berth.TrainingArguments(output_dir=str(tmp_path / "out"), **ARGS)
    data = dict(train_dataset=spam_ham_rows(8, 0))
    with pytest.raises(berth.Error) as raised:
        berth.Trainer(model=module.to(torch.bfloat16), args=args, **data)
    assert "is BFloat16" in str(raised.value) and "Fix: model.float()" in str(raised.value)
    module.float()
    trainer = berth.Trainer(model=module, args=args, **data)
    with pytest.raises(berth.Error) as raised:
        trainer.hyperparameter_search(hp_space={"learning_rate": [1e-3, 1e-4]}, method="grid", n_trials=0)
    assert "trained in place" in str(raised.value) and "model=dir" in str(raised.value)
    config = transformers.BertConfig(**{k: v for k, v in module.config.to_dict().items() if k != "_name_or_path"})
    bare = transformers.BertForSequenceClassification(config)  # not loaded from a folder: no tokenizer beside
    with pytest.raises(berth.Error) as raised:
        berth.Trainer(model=bare, args=args, **data)
    assert "tokenizer=" in str(raised.value) and "Fix:" in str(raised.value)


def test_hyperparameter_search_runs_the_cpp_search(tmp_path):
    trainer = python_trainer(tmp_path, tmp_path / "search", {"max_steps": 2, "report_to": ["none"]})
    best = trainer.hyperparameter_search(hp_space={"learning_rate": [1e-3, 1e-5]}, n_trials=0,
                                         direction="minimize", method="grid", objective_metric="eval_loss")
    with open(tmp_path / "search" / "hp_search.jsonl") as f:
        trials = [json.loads(line) for line in f]
    assert len(trials) == 2
    assert best.run_id.startswith("run-")
    assert float(best.hyperparameters["learning_rate"]) in (1e-3, 1e-5)
    assert best.objective == pytest.approx(best.run_summary["eval_loss"])
    with pytest.raises(berth.Error) as raised:
        trainer.hyperparameter_search(hp_space=lambda trial: {}, n_trials=2)
    assert "Fix:" in str(raised.value)
