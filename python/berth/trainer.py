"""berth.Trainer: HF transformers' Trainer API over berth's C++ Trainer, built as `berth train` builds it.

The C++ loop runs with the GIL released; compute_metrics and callbacks are called from it with the GIL held
for their duration only. Datasets may be JSONL/CSV/TSV paths, lists of dicts, or HF datasets.Dataset-like
objects (anything with .to_list(), or an iterable of dicts), which are written to a JSONL file and read by the
same C++ reader the CLI uses.
"""

import atexit
import collections
import json
import os
import tempfile
import weakref

TrainOutput = collections.namedtuple("TrainOutput", ["global_step", "training_loss", "metrics"])
PredictionOutput = collections.namedtuple("PredictionOutput", ["predictions", "label_ids", "metrics"])
BestRun = collections.namedtuple("BestRun", ["run_id", "objective", "hyperparameters", "run_summary"])

_EVENTS = (
    "on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_step_begin",
    "on_substep_end", "on_pre_optimizer_step", "on_optimizer_step", "on_step_end", "on_log", "on_evaluate",
    "on_predict", "on_save",
)


class EvalPrediction:
    """What compute_metrics receives, as HF's EvalPrediction: numpy arrays of the logits and the labels."""

    def __init__(self, predictions, label_ids):
        self.predictions = predictions
        self.label_ids = label_ids

    def __iter__(self):  # HF's `logits, labels = eval_pred`
        return iter((self.predictions, self.label_ids))

    def __getitem__(self, i):
        return (self.predictions, self.label_ids)[i]


class TrainerState:
    """HF's TrainerState fields, as the C++ Trainer has them at the callback."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class TrainerControl:
    """HF's TrainerControl: set should_training_stop / should_save / ... in a callback to steer the loop."""

    def __init__(self, should_training_stop=False, should_epoch_stop=False, should_save=False,
                 should_evaluate=False, should_log=False):
        self.should_training_stop = should_training_stop
        self.should_epoch_stop = should_epoch_stop
        self.should_save = should_save
        self.should_evaluate = should_evaluate
        self.should_log = should_log


class TrainerCallback:
    """HF's TrainerCallback: override any of on_train_begin, on_step_end, on_log(logs=...),
    on_evaluate(metrics=...), ...; each gets (args, state, control, **kwargs). transformers' own
    TrainerCallback subclasses work as well."""


def _is_base_method(cls):
    return cls.__name__ == "TrainerCallback" and cls.__module__.split(".")[0] in ("transformers", "berth")


def _implemented_events(callbacks):
    """The events some callback overrides: only those cross from C++ into Python."""
    events = set()
    for callback in callbacks:
        for event in _EVENTS:
            owner = next((c for c in type(callback).__mro__ if event in c.__dict__), None)
            if owner is not None and not _is_base_method(owner):
                events.add(event)
    return events


def _rows(dataset):
    if hasattr(dataset, "to_list"):
        return dataset.to_list()
    return [dict(row) for row in dataset]


def _plain(value):
    """A JSON-writable value: numpy and torch scalars as Python numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


class Trainer:
    """Trainer(model=DIR, preset name or torch.nn.Module, args=TrainingArguments(...), train_dataset=...,
    eval_dataset=..., compute_metrics=fn, callbacks=[...]) as HF's, with train(), evaluate(), predict(),
    save_model() and hyperparameter_search(). A module (a transformers PreTrainedModel) is trained in place:
    berth's model shares its tensors. Beyond HF's: tokenizer=DIR (a preset has no tokenizer of its own), task,
    config_overrides ("num_hidden_layers=2"), text_column / text_pair_column / label_column,
    early_stopping_patience, block_size and mlm_probability, as `berth train`'s flags of those names."""

    def __init__(self, model=None, args=None, train_dataset=None, eval_dataset=None, compute_metrics=None,
                 callbacks=None, tokenizer=None, processing_class=None, task=None, config_overrides=None,
                 text_column="text", text_pair_column=None, label_column="label", problem_type=None,
                 early_stopping_patience=0, early_stopping_threshold=0.0, block_size=0, mlm_probability=0.15,
                 test_dataset=None):
        from . import _core
        from .training_arguments import TrainingArguments

        if args is None:
            args = TrainingArguments(output_dir="trainer_output")
        elif not isinstance(args, TrainingArguments):
            args = TrainingArguments.from_hf(args)
        self.args = args
        self.compute_metrics = compute_metrics
        self.callbacks = [c() if isinstance(c, type) else c for c in (callbacks or [])]
        self._data_dir = None
        self._columns = dict(text_column=text_column, text_pair_column=text_pair_column,
                             label_column=label_column)
        options = dict(self._columns, task=task, config_overrides=config_overrides, problem_type=problem_type,
                       early_stopping_patience=early_stopping_patience,
                       early_stopping_threshold=early_stopping_threshold, block_size=block_size,
                       mlm_probability=mlm_probability)
        self.model = model  # HF's trainer.model: what was passed (a module is trained in place)
        options.update(self._model_options(model, tokenizer or processing_class))
        options["train"] = self._data_path(train_dataset, "train")
        options["eval"] = self._data_path(eval_dataset, "eval")
        options["test"] = self._data_path(test_dataset, "test")
        metrics = self._metrics_adapter if compute_metrics is not None else None
        self._job = _core.TrainingJob(options, args.to_json_string(), metrics, self._dispatch,
                                      _implemented_events(self.callbacks))
        self.state = TrainerState(global_step=0, epoch=0.0, log_history=[])
        if self._job.world_size > 1:
            # Rank 0 hosts the rendezvous store: every rank meets at exit so that it leaves last.
            job = weakref.ref(self._job)
            atexit.register(lambda: job() is not None and job().barrier())

    def _model_options(self, model, tokenizer):
        from . import _core

        if tokenizer is not None and not isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = getattr(tokenizer, "name_or_path", None) or getattr(tokenizer, "path", None)
        if hasattr(model, "state_dict") and hasattr(model, "named_parameters"):  # a torch.nn.Module
            return self._module_options(model, tokenizer)
        if not isinstance(model, (str, os.PathLike)):
            raise _core.Error(
                f"Trainer(model=...): expected an HF model directory, a preset name or a torch.nn.Module, found "
                f"{type(model).__name__}. Fix: model=\"path/to/model\" (the folder from save_pretrained), "
                f"model=\"bert-tiny\", or model=AutoModelForSequenceClassification.from_pretrained(...)")
        model = os.fspath(model)
        if os.path.isdir(model):
            return {"model": model, "tokenizer": tokenizer}
        return {"model_preset": model, "tokenizer": tokenizer}

    def _module_options(self, module, tokenizer):
        """model= a torch.nn.Module with an HF config (a transformers PreTrainedModel): berth builds its
        family's model from that config (config.json in a temporary folder) with the module's own tensors as
        its parameters, shared, not copied: training updates the module."""
        from . import _core

        name = type(module).__name__
        config = getattr(module, "config", None)
        if config is None or not hasattr(config, "to_dict"):
            raise _core.Error(
                f"Trainer(model={name}): the module has no HF config (module.config), and berth builds the "
                f"model it trains from one. Fix: pass a transformers PreTrainedModel of a family berth "
                f"implements (or set module.config to its PretrainedConfig), or model=DIR")
        values = config.to_dict()
        if type(module).__module__.split(".")[0] == "transformers":
            values["architectures"] = [name]  # the head this module is, even when built from a config
        source = getattr(module, "name_or_path", "") or values.get("_name_or_path", "")
        if tokenizer is None and source and os.path.isdir(source):
            tokenizer = source  # from_pretrained(dir): the tokenizer is usually beside the weights
        if tokenizer is None:
            raise _core.Error(
                f"Trainer(model={name}): berth reads the tokenizer from its files, and this module was not "
                f"loaded from a folder that has them. Fix: tokenizer=\"DIR\" or "
                f"processing_class=AutoTokenizer.from_pretrained(\"DIR\")")
        folder = os.path.join(self._temporary_dir(), "model")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as out:
            json.dump(values, out, indent=2, sort_keys=True)
        return {"model": folder, "tokenizer": tokenizer, "shared_tensors": dict(module.state_dict(keep_vars=True)),
                "shared_source": f"Trainer(model={name})"}

    def _temporary_dir(self):
        if self._data_dir is None:
            self._data_dir = tempfile.TemporaryDirectory(prefix="berth-data-")
        return self._data_dir.name

    def _data_path(self, dataset, split):
        """A path the C++ reader reads: the path itself, or the rows written as JSONL."""
        if dataset is None:
            return None
        if isinstance(dataset, (str, os.PathLike)):
            return os.fspath(dataset)
        path = os.path.join(self._temporary_dir(), f"{split}.jsonl")
        with open(path, "w", encoding="utf-8") as out:
            for row in _rows(dataset):
                out.write(json.dumps({k: _plain(v) for k, v in row.items()}, ensure_ascii=False) + "\n")
        return path

    def _metrics_adapter(self, logits, label_ids):
        prediction = EvalPrediction(logits.numpy(), None if label_ids is None else label_ids.numpy())
        return {name: float(value) for name, value in self.compute_metrics(prediction).items()}

    def _dispatch(self, event, state, control, payload):
        self.state = TrainerState(**state)
        ctl = TrainerControl(**control)
        kwargs = {}
        if event == "on_log":
            kwargs["logs"] = payload
        elif event in ("on_evaluate", "on_predict"):
            kwargs["metrics"] = payload
        for callback in self.callbacks:
            method = getattr(callback, event, None)
            if method is not None:
                returned = method(self.args, self.state, ctl, **kwargs)
                if returned is not None:
                    ctl = returned
        return vars(ctl)

    @property
    def labels(self):
        """The classes the model predicts, in id order."""
        return list(self._job.labels)

    def train(self, resume_from_checkpoint=None):
        """HF's train(): the whole loop; the final model, its tokenizer and training_args.json in
        args.output_dir. A Ctrl-C stops at the next step (with a checkpoint unless save_strategy="no") and
        raises KeyboardInterrupt after it."""
        if resume_from_checkpoint is True:
            resume_from_checkpoint = "latest"
        out = self._job.train(resume_from_checkpoint or None)
        if out["interrupted"]:
            raise KeyboardInterrupt("berth: training stopped at step " + str(out["global_step"]))
        return TrainOutput(out["global_step"], out["training_loss"], out["metrics"])

    def evaluate(self, eval_dataset=None, metric_key_prefix="eval"):
        return self._job.evaluate(self._data_path(eval_dataset, "evaluate"), metric_key_prefix)

    def predict(self, test_dataset, metric_key_prefix="test"):
        out = self._job.predict(self._data_path(test_dataset, "predict"), metric_key_prefix)
        labels = out["label_ids"]
        return PredictionOutput(out["predictions"].numpy(), None if labels is None else labels.numpy(),
                                out["metrics"])

    def save_model(self, output_dir=None):
        self._job.save_model(output_dir or "")

    def hyperparameter_search(self, hp_space=None, n_trials=10, direction="maximize", method="random",
                              compute_objective=None, backend=None, objective_metric=""):
        """Trials over hp_space: berth's search-space dict ({"learning_rate": {"type": "log_uniform",
        "low": 1e-5, "high": 1e-3}, "per_device_train_batch_size": [16, 32]}) or a JSON file's path."""
        from . import _core

        if callable(hp_space) or compute_objective is not None or backend not in (None, "berth"):
            raise _core.Error(
                "hyperparameter_search: berth searches a declared space itself (no optuna/ray trial objects, "
                "no compute_objective). Fix: hp_space={\"learning_rate\": {\"type\": \"log_uniform\", "
                "\"low\": 1e-5, \"high\": 1e-3}} and objective_metric=\"eval_accuracy\"")
        if isinstance(hp_space, (str, os.PathLike)):
            with open(hp_space, encoding="utf-8") as f:
                hp_space = json.load(f)
        best = self._job.hyperparameter_search(json.dumps(hp_space or {}), n_trials, direction, method,
                                               objective_metric)
        return BestRun(best["run_id"], best["objective"], best["hyperparameters"], best["metrics"])
