"""berth.TrainingArguments (kwargs and from_hf), berth.Error / InternalError, doctor() and tokenizer(DIR)."""

import pytest
import torch

import berth
from conftest import tiny_bert_dir


def test_kwargs_take_hf_names_with_the_cpp_defaults():
    args = berth.TrainingArguments(output_dir="out", learning_rate=2e-5, per_device_train_batch_size=4,
                                   evaluation_strategy="epoch", report_to=["none"])
    assert args.learning_rate == 2e-5
    assert args.per_device_train_batch_size == 4
    assert args.eval_strategy == "epoch"  # HF's old name, as the C++ alias table maps it
    assert args.num_train_epochs == 3.0 and args.lr_scheduler_type == "linear"  # HF's defaults
    assert set(args.to_dict()) == set(berth._core.training_argument_names())


def test_an_unknown_keyword_is_refused_as_the_cli_refuses_its_flag():
    with pytest.raises(berth.Error) as raised:
        berth.TrainingArguments(output_dir="out", learning_rat=1e-3)
    message = str(raised.value)
    assert "unknown training argument 'learning_rat'" in message
    assert "did you mean 'learning_rate'" in message
    assert "Fix:" in message


def test_a_value_breaking_a_rule_names_the_rule_and_the_fix():
    with pytest.raises(berth.Error) as raised:
        berth.TrainingArguments(output_dir="out", lr_scheduler_type="sideways")
    assert "lr_scheduler_type" in str(raised.value) and "Fix:" in str(raised.value)
    with pytest.raises(berth.Error) as raised:
        berth.TrainingArguments(output_dir="out", learning_rate="fast")
    assert "learning_rate" in str(raised.value)


def test_setting_an_attribute_is_checked_too():
    args = berth.TrainingArguments(output_dir="out")
    args.max_steps = 7
    assert args.max_steps == 7
    with pytest.raises(berth.Error):
        args.per_device_train_batch_size = 0


def test_from_hf_converts_transformers_training_arguments(tmp_path):
    transformers = pytest.importorskip("transformers")
    hf = transformers.TrainingArguments(output_dir=str(tmp_path), learning_rate=3e-5,
                                        per_device_train_batch_size=4, eval_strategy="steps", eval_steps=5,
                                        weight_decay=0.01, warmup_steps=2, seed=11, report_to="none")
    args = berth.TrainingArguments.from_hf(hf)
    for name in ("output_dir", "learning_rate", "per_device_train_batch_size", "eval_strategy", "eval_steps",
                 "weight_decay", "warmup_steps", "seed", "num_train_epochs", "lr_scheduler_type"):
        hf_value = getattr(hf, name)
        hf_value = getattr(hf_value, "value", hf_value)  # HF's enums
        assert getattr(args, name) == hf_value, name
    assert isinstance(args.warnings, list)


def test_errors_are_berth_types_with_the_cpp_message():
    assert issubclass(berth.PlacementError, berth.Error)
    assert issubclass(berth.Error, RuntimeError)
    assert issubclass(berth.InternalError, RuntimeError) and not issubclass(berth.InternalError, berth.Error)
    with pytest.raises(berth.Error) as raised:
        berth.tokenizer("/nonexistent/model")
    assert "/nonexistent/model" in str(raised.value)


def test_the_version_is_the_builds_and_another_torch_is_refused_with_the_fix():
    assert berth.__version__ == berth.doctor(device="cpu")["berth_version"]
    berth._check_torch(torch.__version__, berth._build_info.torch_version)  # the torch imported now: accepted
    with pytest.raises(ImportError) as refused:
        berth._check_torch("2.14.1+cpu", "2.15.0", "/venv/torch/__init__.py")
    assert str(refused.value) == (
        f"berth {berth.__version__} was built for torch 2.15.0, but this Python imports torch 2.14.1+cpu "
        "(/venv/torch/__init__.py): a C++ extension runs only with the torch it was compiled against. Fix: pip "
        "install torch==2.15.0 (berth's pin), or rebuild berth against this torch (pip install . from the source "
        "tree)")


def test_doctor_returns_the_json_as_a_dict():
    report = berth.doctor(device="cpu")
    assert report["torch_version"].split("+")[0] == torch.__version__.split("+")[0]
    assert report["device"] == "cpu"
    for key in ("berth_version", "features", "blas", "threads", "cuda", "warnings", "problems"):
        assert key in report, key


def test_tokenizer_encodes_as_hf_tokenizers():
    transformers = pytest.importorskip("transformers")
    directory = tiny_bert_dir()  # vocab.txt and tokenizer_config.json, as transformers reads them
    ours = berth.tokenizer(directory)
    theirs = transformers.AutoTokenizer.from_pretrained(directory).backend_tokenizer  # HF tokenizers' own
    texts = ["Free prize, click here NOW!", "the build is green", "résumé naïve café"]
    for text in texts:
        a, b = ours.encode(text), theirs.encode(text)
        for field in ("ids", "type_ids", "attention_mask", "special_tokens_mask", "tokens", "word_ids"):
            assert getattr(a, field) == getattr(b, field), (text, field)
        assert [tuple(o) for o in a.offsets] == [tuple(o) for o in b.offsets], text
        assert ours.decode(a.ids) == theirs.decode(b.ids)
    pair_a = ours.encode("meeting tomorrow", "review report")
    pair_b = theirs.encode("meeting tomorrow", "review report")
    assert pair_a.ids == pair_b.ids and pair_a.type_ids == pair_b.type_ids
    assert pair_a.word_ids == pair_b.word_ids  # each sequence's words counted from 0, special tokens None
    batch_a = ours.encode_batch(texts + [("meeting tomorrow", "review report")])
    batch_b = theirs.encode_batch(texts + [("meeting tomorrow", "review report")])
    assert [e.ids for e in batch_a] == [e.ids for e in batch_b]
    assert ours.get_vocab_size() == theirs.get_vocab_size()
