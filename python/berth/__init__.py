"""import berth: berth's C++ trainer, placement checks, doctor and tokenizers from Python.

A thin binding over the same libberth the `berth` command runs (berth._core), with HF transformers' names:
TrainingArguments, Trainer, and explain_placement for any torch.nn.Module.
"""

import json as _json

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
