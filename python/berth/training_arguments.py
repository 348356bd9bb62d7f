"""berth.TrainingArguments: HF's argument names, checked by berth's C++ table (the one `berth train` uses)."""

import json


class TrainingArguments:
    """TrainingArguments(output_dir="out", learning_rate=2e-5, ...): every keyword is one of berth's training
    arguments (HF's names); an unknown one raises berth.Error with the closest known name, as `berth train
    --unknown-flag` does. Attributes hold the resolved values (defaults included)."""

    def __init__(self, **kwargs):
        from . import _core

        self._set(_core.training_arguments_from_kwargs(json.dumps(kwargs)))

    def _set(self, json_text):
        self.__dict__["_json"] = json_text
        self.__dict__.update(json.loads(json_text))

    @classmethod
    def from_hf(cls, hf_args):
        """Converts a transformers.TrainingArguments, as berth reads an HF training_args.json: the arguments
        berth does not implement are left out with a warning (berth.TrainingArguments.warnings)."""
        from . import _core

        text = hf_args.to_json_string() if hasattr(hf_args, "to_json_string") else json.dumps(hf_args)
        json_text, warnings = _core.training_arguments_from_hf(text)
        args = cls.__new__(cls)
        args._set(json_text)
        args.__dict__["warnings"] = list(warnings)
        return args

    def __setattr__(self, name, value):
        # A change goes through the same checks as a keyword.
        changed = self.to_dict()
        changed[name] = value
        self._set(TrainingArguments(**changed).to_json_string())

    def to_dict(self):
        return json.loads(self._json)

    def to_json_string(self):
        return self._json

    def __repr__(self):
        return "TrainingArguments(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"


def from_hf(hf_args):
    """berth.TrainingArguments from a transformers.TrainingArguments (see TrainingArguments.from_hf)."""
    return TrainingArguments.from_hf(hf_args)
