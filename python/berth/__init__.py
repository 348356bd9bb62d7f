"""import berth: berth's C++ trainer, eval and predict, placement checks, doctor and tokenizers from Python.

A thin binding over the same libberth the `berth` command runs (berth._core), with HF transformers' names:
TrainingArguments, Trainer, and explain_placement for any torch.nn.Module.
"""

import json as _json
import os as _os

import torch as _torch  # noqa: F401  (loads libtorch and torch's type casters before the C++ module)

from . import _build_info

__version__ = _build_info.version


def _check_torch(found, built, where="torch"):
    """Refuses a torch other than the one berth._core was compiled against (its C++ ABI is that version's)."""
    if found.split("+")[0] != built.split("+")[0]:
        raise ImportError(
            f"berth {__version__} was built for torch {built}, but this Python imports torch {found} ({where}): a "
            f"C++ extension runs only with the torch it was compiled against. Fix: pip install torch=={built} "
            f"(berth's pin), or rebuild berth against this torch (pip install . from the source tree)")


_check_torch(_torch.__version__, _build_info.torch_version, _torch.__file__)

from . import _core  # noqa: E402
from ._core import Error, InternalError, PlacementError
from .placement import explain_placement
from .trainer import EvalPrediction, Trainer, TrainerCallback, TrainerControl, TrainerState
from .training_arguments import TrainingArguments

__all__ = [
    "Error",
    "EvalPrediction",
    "InternalError",
    "PlacementError",
    "Trainer",
    "TrainerCallback",
    "TrainerControl",
    "TrainerState",
    "TrainingArguments",
    "doctor",
    "evaluate_model",
    "explain_placement",
    "predict_file",
    "tokenizer",
]


def doctor(device="auto", model=None):
    """`berth doctor --json` as a dict: versions, features, BLAS, threads, CUDA, the device a run would use,
    warnings and problems (and, with model=DIR, where that model's tensors land)."""
    return _json.loads(_core.doctor_json(device, model or ""))


def tokenizer(path):
    """berth's tokenizer of an HF model directory (tokenizer.json and tokenizer_config.json), or of a
    tokenizer.json file, with HF tokenizers' encode / encode_batch / decode and Encoding fields."""
    import os

    if os.path.isfile(path):
        return _core.Tokenizer.from_file(path)
    return _core.Tokenizer.from_pretrained(path)


def evaluate_model(model_dir, *, test_file=None, eval_file=None, task=None, batch_size=32, max_length=0,
                   device="auto", bf16=False):
    """`berth eval --model MODEL_DIR` as a call: the model's task decides how the file is read (texts and
    labels, words and tags, or SQuAD-style questions); test_file is evaluated, else eval_file. Prints the
    metrics as the command does and returns them as a dict ({"eval_loss": ..., "eval_f1": ...})."""
    test_file = None if test_file is None else _os.fspath(test_file)
    eval_file = None if eval_file is None else _os.fspath(eval_file)
    return _core.run_eval_job(_os.fspath(model_dir), test_file=test_file, eval_file=eval_file, task=task,
                              batch_size=batch_size, max_length=max_length, device=device, bf16=bf16)


def predict_file(model_dir, input, output, *, task=None, batch_size=32, max_length=0, device="auto"):
    """`berth predict --model MODEL_DIR --input INPUT --output OUTPUT` as a call: one JSON line per input
    (labels, continuations, answer spans or labelled words, by the model's task), written to output
    atomically; returns the number of lines."""
    if not output:
        raise ValueError("predict_file: output is empty. Fix: pass the JSONL file to write, e.g. "
                         "predict_file(model_dir, \"in.jsonl\", \"predictions.jsonl\")")
    return _core.run_predict_job(_os.fspath(model_dir), _os.fspath(input), _os.fspath(output), task=task,
                                 batch_size=batch_size, max_length=max_length, device=device)
