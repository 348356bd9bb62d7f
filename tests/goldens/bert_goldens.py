#!/usr/bin/env python3
# purpose: model goldens from HF transformers itself (transformers==5.24.0, pinned in scripts/requirements.txt):
# BertForSequenceClassification and BertModel on tiny random configs, in eager attention and in HF's default SDPA
# (logits, loss, hidden states, every parameter's gradient), plus a tiny HF model dir for `berth predict`.
#
# Usage: scripts/python tests/goldens/bert_goldens.py OUT_DIR (the venv's Python: torch, transformers,
# safetensors). Offline: models are built from BertConfig, never downloaded. Every file is written by the libraries
# (save_pretrained with safe_serialization, safetensors.torch.save_file); nothing restates HF's modeling code.
#
# Per case, OUT_DIR/bert/<case>/ holds
#   config.json        transformers' save_pretrained, written before the forward (so problem_type is there only
#                      when the case sets it)
#   model.safetensors  save_pretrained's: every parameter under its HF name, metadata {"format": "pt"}
#   golden.safetensors inputs (input_ids, attention_mask?, token_type_ids?, labels?), outputs (logits, loss of
#                      BertForSequenceClassification; last_hidden_state, pooler_output of BertModel.from_pretrained
#                      on the same dir) and grad.<name> for every parameter of the classifier; metadata says which
#                      optional inputs the forward call was given, the attention implementation, and the
#                      problem_type HF's forward chose ("" without labels).
# CASES run in eager attention (berth implements HF's eager path); each runs again as <case>_sdpa with the same
# weights and inputs under SDPA, HF's default, where the mask allows it (every query row attends to a key).
# cases.txt lists the eager cases, then the SDPA ones.
# OUT_DIR/tiny_bert_classifier/ is an HF model dir (config.json, model.safetensors, vocab.txt, tokenizer_config.json)
# whose special tokens are deliberately NOT at bert-base-uncased's ids; OUT_DIR/tiny_bert_classifier_predict/ holds
# input.jsonl and expected.jsonl (input_ids and token_type_ids from HF's BertTokenizer loading that dir; logits,
# probabilities, label from BertForSequenceClassification.from_pretrained of it) for `berth predict`.
#
# Also imported by optim_goldens.py and bench/train_step.py: base_config() and build_classifier().

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import BertConfig, BertModel, BertTokenizer  # noqa: E402

transformers.utils.logging.disable_progress_bar()


# ---------------------------------------------------------------------------------------------------------------
# Configs: plain dicts of BertConfig's arguments (id2label with int keys; label2id follows from it).


def base_config(**overrides):
    c = {
        "vocab_size": 50,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 37,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "max_position_embeddings": 16,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "use_cache": True,
        "id2label": {0: "LABEL_0", 1: "LABEL_1"},
        "problem_type": None,
    }
    c.update(overrides)
    return c


def hf_config(c, attn_implementation="eager"):
    kwargs = {k: v for k, v in c.items() if k not in ("id2label", "problem_type")}
    if c["id2label"] != {0: "LABEL_0", 1: "LABEL_1"}:
        # As HF's examples pass them; with id2label alone transformers 5 writes "label2id": null.
        kwargs["id2label"] = dict(c["id2label"])
        kwargs["label2id"] = {name: i for i, name in c["id2label"].items()}
    if c.get("problem_type") is not None:
        kwargs["problem_type"] = c["problem_type"]
    return BertConfig(attn_implementation=attn_implementation, **kwargs)


def build_classifier(c, attn_implementation="eager"):
    model = transformers.BertForSequenceClassification(hf_config(c, attn_implementation))
    assert model.config._attn_implementation == attn_implementation, model.config._attn_implementation
    return model


def randomize(model, generator):
    # Far from HF's init on purpose (std 0.02 makes every layer nearly linear): weights and biases that
    # exercise the activations, LayerNorm affine terms that are not 1/0.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=generator))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))


def labels_for(kind, batch, num_labels, generator):
    if kind == "long":
        return torch.randint(0, num_labels, (batch,), generator=generator)
    if kind == "long_ignored":
        labels = torch.randint(0, num_labels, (batch,), generator=generator)
        labels[1] = -100  # CrossEntropyLoss's ignore_index: that row adds nothing to the loss
        return labels
    if kind == "float":
        return torch.randn((batch,) if num_labels == 1 else (batch, num_labels), generator=generator)
    if kind == "multi_hot":
        return (torch.rand((batch, num_labels), generator=generator) > 0.5).to(torch.float32)
    raise ValueError(kind)


CASES = [
    # name, config overrides, batch, length, give mask, give token types, label kind
    ("gelu_single_label", dict(hidden_act="gelu", id2label={0: "a", 1: "b", 2: "c"}), 3, 7, True, True, "long"),
    ("gelu_new_regression", dict(hidden_act="gelu_new", num_hidden_layers=1, id2label={0: "LABEL_0"}), 4, 5, True,
     False, "float"),
    ("relu_multi_label", dict(hidden_act="relu", id2label={i: f"tag{i}" for i in range(4)}, type_vocab_size=3), 3, 9,
     True, True, "multi_hot"),
    ("gelu_pytorch_tanh_explicit_single", dict(hidden_act="gelu_pytorch_tanh", pad_token_id=3, num_hidden_layers=1,
     problem_type="single_label_classification", classifier_dropout=0.3), 4, 6, False, False, "long_ignored"),
    ("gelu_regression_two_outputs", dict(problem_type="regression", hidden_dropout_prob=0.0,
     attention_probs_dropout_prob=0.0), 2, 8, True, True, "float"),
    ("gelu_no_labels", dict(num_attention_heads=8, layer_norm_eps=1e-5), 2, 4, True, False, None),
]


def case_inputs(c, batch, length, label_kind, generator):
    input_ids = torch.randint(0, c["vocab_size"], (batch, length), generator=generator)
    mask = torch.ones(batch, length, dtype=torch.long)
    for row in range(1, batch):  # right padding of different lengths; row 0 stays full
        keep = max(1, length - row - (row % 2))
        mask[row, keep:] = 0
        input_ids[row, keep:] = c["pad_token_id"]
    types = torch.randint(0, c["type_vocab_size"], (batch, length), generator=generator)
    labels = labels_for(label_kind, batch, len(c["id2label"]), generator) if label_kind else None
    return input_ids, mask, types, labels


def run_case(root, name, overrides, batch, length, give_mask, give_types, label_kind, seed, attn_implementation):
    c = base_config(**overrides)
    generator = torch.Generator().manual_seed(seed)
    model = build_classifier(c, attn_implementation)
    randomize(model, generator)
    model.eval()  # dropout off: the C++ side compares in eval mode
    input_ids, mask, types, labels = case_inputs(c, batch, length, label_kind, generator)
    if attn_implementation == "sdpa":
        # SDPA gives NaN for a query row whose keys are all masked; no case pads a row away entirely.
        assert bool((mask.sum(dim=1) > 0).all()), name

    out_dir = os.path.join(root, "bert", name)
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)  # before the forward, which may set problem_type

    kwargs = {"attention_mask": mask if give_mask else None, "token_type_ids": types if give_types else None}
    out = model(input_ids=input_ids, labels=labels, **kwargs)
    if out.loss is not None:
        out.loss.backward()

    # BertModel itself, loaded from the dir just written (the classifier's head is unexpected there).
    base = BertModel.from_pretrained(out_dir, attn_implementation=attn_implementation)
    assert base.config._attn_implementation == attn_implementation
    base.eval()
    with torch.no_grad():
        base_out = base(input_ids=input_ids, **kwargs)

    golden = {"input_ids": input_ids, "logits": out.logits, "last_hidden_state": base_out.last_hidden_state,
              "pooler_output": base_out.pooler_output}
    if give_mask:
        golden["attention_mask"] = mask
    if give_types:
        golden["token_type_ids"] = types
    if labels is not None:
        golden["labels"] = labels
        golden["loss"] = out.loss
        for pname, p in model.named_parameters():
            # A parameter the loss never reaches (e.g. an unused token type row still gets a zero grad) has
            # p.grad filled; one with no path at all would be None: write zeros, as berth's grad would be.
            golden["grad." + pname] = p.grad if p.grad is not None else torch.zeros_like(p)
    golden = {k: v.detach().contiguous() for k, v in golden.items()}
    save_file(golden, os.path.join(out_dir, "golden.safetensors"),
              metadata={"case": name, "attention_mask": str(give_mask).lower(),
                        "token_type_ids": str(give_types).lower(), "attn_implementation": attn_implementation,
                        "problem_type": model.config.problem_type or "",
                        "transformers_version": transformers.__version__})
    return name


# ---------------------------------------------------------------------------------------------------------------
# tiny_bert_classifier: an HF model dir for `berth predict`, special tokens away from 0/100/101/102/103.

SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("the a an and or to of in on for is are was be you your we our it this that with from at by free money "
         "offer click now win winner prize cash credit loan rate cheap buy order deal limited time act urgent "
         "meeting tomorrow lunch project report attached please review thanks regards team call later week "
         "schedule notes draft update question answer code build test release bug fix server list mail email "
         "message subscribe unsubscribe link here site online account bank password verify secure claim "
         "congratulations selected guaranteed income home work hello hi dear friend family weekend photos "
         "dinner coffee agenda budget invoice payment").split()
PIECES = ["##ing", "##ed", "##er", "##ly", "##est", "##tion"]
PUNCT = [".", ",", "!", "?", "'", ":", "-", "$"]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]


def tiny_vocab():
    vocab = SPECIALS + PUNCT + LETTERS + ["##" + l for l in LETTERS] + PIECES
    for word in WORDS:
        if word not in vocab:
            vocab.append(word)
    assert len(set(vocab)) == len(vocab), "vocab.txt needs each token once"
    return vocab


PREDICT_INPUTS = [
    {"text": "Congratulations! You win a free prize, click here now."},
    {"text": "Meeting tomorrow: please review the attached report."},
    {"text": "Cheap loans, guaranteed income!", "text_pair": "Act now, limited time offer."},
    {"text": "Hi team, the build is green", "text_pair": "thanks for the quick fix"},
    {"text": "Verify your bank account password here"},
]


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def write_tiny_classifier(root):
    vocab = tiny_vocab()
    out_dir = os.path.join(root, "tiny_bert_classifier")
    os.makedirs(out_dir, exist_ok=True)
    # The tokenizer files are inputs (the vocabulary and its settings), written as a BERT tokenizer dir has them.
    write_text(os.path.join(out_dir, "vocab.txt"), "".join(piece + "\n" for piece in vocab))
    tokenizer_config = {"do_lower_case": True, "model_max_length": 64, "tokenizer_class": "BertTokenizer",
                        "strip_accents": None, "tokenize_chinese_chars": True, "cls_token": "[CLS]",
                        "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"}
    write_text(os.path.join(out_dir, "tokenizer_config.json"),
               json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n")
    tokenizer = BertTokenizer.from_pretrained(out_dir)
    assert tokenizer.cls_token_id == vocab.index("[CLS]") and tokenizer.pad_token_id == vocab.index("[PAD]")

    encoded = []
    for item in PREDICT_INPUTS:
        e = tokenizer(item["text"], item.get("text_pair"))
        assert tokenizer.unk_token_id not in e["input_ids"], item
        encoded.append((e["input_ids"], e["token_type_ids"]))

    c = base_config(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=48, max_position_embeddings=64, id2label={0: "ham", 1: "spam"})
    model = build_classifier(c)
    randomize(model, torch.Generator().manual_seed(1234))
    model.eval()

    def logits_of(m, ids, types):
        with torch.no_grad():
            return m(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types])).logits[0]

    # A random model puts every input in one class; centring the classifier's bias on these inputs makes the
    # predicted labels differ, so a test of `berth predict` also checks the id2label lookup.
    with torch.no_grad():
        model.classifier.bias -= torch.stack([logits_of(model, *e) for e in encoded]).mean(dim=0)
    model.save_pretrained(out_dir, safe_serialization=True)

    # The expectations come from the dir as HF loads it.
    loaded = transformers.BertForSequenceClassification.from_pretrained(out_dir, attn_implementation="eager")
    loaded.eval()
    predict_dir = os.path.join(root, "tiny_bert_classifier_predict")
    os.makedirs(predict_dir, exist_ok=True)
    expected = []
    for ids, types in encoded:
        logits = logits_of(loaded, ids, types)
        expected.append(json.dumps({"input_ids": ids, "token_type_ids": types,
                                    "label": loaded.config.id2label[int(logits.argmax())],
                                    "logits": logits.tolist(),
                                    "probabilities": torch.softmax(logits, dim=-1).tolist()}))
    labels = {json.loads(line)["label"] for line in expected}
    assert labels == {"ham", "spam"}, labels
    write_text(os.path.join(predict_dir, "input.jsonl"), "".join(json.dumps(item) + "\n" for item in PREDICT_INPUTS))
    write_text(os.path.join(predict_dir, "expected.jsonl"), "".join(line + "\n" for line in expected))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bert_goldens.py OUT_DIR")
    root = sys.argv[1]
    torch.manual_seed(0)  # HF's own init runs before randomize() replaces every weight
    names = []
    for attn_implementation, suffix in (("eager", ""), ("sdpa", "_sdpa")):
        for i, (name, *rest) in enumerate(CASES):
            names.append(run_case(root, name + suffix, *rest, seed=100 + i, attn_implementation=attn_implementation))
    write_text(os.path.join(root, "bert", "cases.txt"), "".join(n + "\n" for n in names))
    write_tiny_classifier(root)
    write_text(os.path.join(root, "bert", "stamp"), "done\n")


if __name__ == "__main__":
    main()
