"""import berth: berth's C++ trainer, placement checks, doctor and tokenizers from Python.

A thin binding over the same libberth the `berth` command runs (berth._core), with HF transformers' names:
TrainingArguments, Trainer, and explain_placement for any torch.nn.Module.
"""

import json as _json

import torch as _torch  # noqa: F401  (loads libtorch and torch's type casters before the C++ module)

from . import _core
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
    "explain_placement",
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
