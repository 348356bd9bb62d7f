#!/usr/bin/python3
# purpose: model goldens: a plain-PyTorch reference of HF transformers' BertForSequenceClassification run on tiny
# random configs (logits, loss, every parameter's gradient), plus a tiny HF-format model dir for `berth predict`.
#
# Usage: bert_goldens.py OUT_DIR. Needs only torch (Debian's python3-torch, /usr/bin/python3): transformers is not
# installable here, so the reference below re-states modeling_bert.py's eager computation with HF's module and
# parameter names, and the files are written in HF's formats (config.json, model.safetensors) by hand.
#
# Per case, OUT_DIR/bert/<case>/ holds
#   config.json        as transformers' save_pretrained writes it (sorted keys, indent 2)
#   model.safetensors  every parameter under its HF name, metadata {"format": "pt"}
#   golden.safetensors inputs (input_ids, attention_mask?, token_type_ids?, labels?), outputs (logits, loss,
#                      last_hidden_state, pooler_output) and grad.<name> for every parameter; metadata says which
#                      optional inputs the forward call was given.
# OUT_DIR/tiny_bert_classifier/ is an HF model dir (config.json, model.safetensors, vocab.txt, tokenizer_config.json)
# whose special tokens are deliberately NOT at bert-base-uncased's ids; OUT_DIR/tiny_bert_classifier_predict/ holds
# input.jsonl and expected.jsonl (input_ids, logits, probabilities, label per line) for `berth predict`.

import json
import math
import os
import struct
import sys

import torch
from torch import nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------------------------------------------
# The reference: HF's BertForSequenceClassification (eager attention), parameter names as in transformers.


def activation(name):
    if name == "gelu":
        return F.gelu
    if name == "relu":
        return F.relu
    if name == "gelu_pytorch_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "gelu_new":
        # transformers' NewGELUActivation, written out as it is there.
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    raise ValueError(name)


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.shape[1]
        position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.head_size = c["hidden_size"] // self.heads
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden, extended_mask):
        q, k, v = self.split(self.query(hidden)), self.split(self.key(hidden)), self.split(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        scores = scores + extended_mask
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(hidden.shape)


class SelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        setattr(self, "self", SelfAttention(c))
        self.output = SelfOutput(c)

    def forward(self, hidden, extended_mask):
        return self.output(getattr(self, "self")(hidden, extended_mask), hidden)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = activation(c["hidden_act"])

    def forward(self, hidden):
        return self.act(self.dense(hidden))


class Output(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = Output(c)

    def forward(self, hidden, extended_mask):
        attended = self.attention(hidden, extended_mask)
        return self.output(self.intermediate(attended), attended)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, hidden, extended_mask):
        for layer in self.layer:
            hidden = layer(hidden, extended_mask)
        return hidden


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, hidden):
        return torch.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)
        self.pooler = Pooler(c)

    def forward(self, input_ids, attention_mask, token_type_ids):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        dtype = self.embeddings.word_embeddings.weight.dtype
        # get_extended_attention_mask: (B, T) -> (B, 1, 1, T), 0 where attended, finfo.min where masked.
        extended = attention_mask[:, None, None, :].to(dtype)
        extended = (1.0 - extended) * torch.finfo(dtype).min
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids), extended)
        return hidden, self.pooler(hidden)


class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.num_labels = len(c["id2label"])
        self.bert = BertModel(c)
        p = c["classifier_dropout"] if c["classifier_dropout"] is not None else c["hidden_dropout_prob"]
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(c["hidden_size"], self.num_labels)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        hidden, pooled = self.bert(input_ids, attention_mask, token_type_ids)
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            problem_type = self.config.get("problem_type")
            if problem_type is None:
                if self.num_labels == 1:
                    problem_type = "regression"
                elif labels.dtype == torch.long or labels.dtype == torch.int:
                    problem_type = "single_label_classification"
                else:
                    problem_type = "multi_label_classification"
            if problem_type == "regression":
                if self.num_labels == 1:
                    loss = nn.MSELoss()(logits.squeeze(), labels.squeeze())
                else:
                    loss = nn.MSELoss()(logits, labels)
            elif problem_type == "single_label_classification":
                loss = nn.CrossEntropyLoss()(logits.view(-1, self.num_labels), labels.view(-1))
            else:
                loss = nn.BCEWithLogitsLoss()(logits, labels)
        return logits, loss, hidden, pooled


# ---------------------------------------------------------------------------------------------------------------
# HF's file formats, written by hand.

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}


def write_safetensors(path, tensors, metadata):
    # 8-byte little-endian header length, the JSON header (padded with spaces to 8 bytes, as safetensors does),
    # then each tensor's bytes, row-major little-endian, in header order.
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        data = t.numpy().tobytes() if t.dim() > 0 else t.reshape(1).numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)
    os.replace(tmp, path)


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def config_json(c):
    # What transformers' save_pretrained writes for a BertConfig (to_diff_dict): the BERT fields always, the
    # label fields when they differ from the 2-label default, model_type, architectures.
    out = {k: v for k, v in c.items() if k not in ("id2label", "label2id", "problem_type")}
    out["model_type"] = "bert"
    out["architectures"] = ["BertForSequenceClassification"]
    if c["id2label"] != {0: "LABEL_0", 1: "LABEL_1"}:
        out["id2label"] = {str(k): v for k, v in c["id2label"].items()}
        out["label2id"] = {v: k for k, v in c["id2label"].items()}
    if c.get("problem_type") is not None:
        out["problem_type"] = c["problem_type"]
    out["torch_dtype"] = "float32"
    return json.dumps(out, indent=2, sort_keys=True) + "\n"


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
        "position_embedding_type": "absolute",
        "use_cache": True,
        "id2label": {0: "LABEL_0", 1: "LABEL_1"},
        "problem_type": None,
    }
    c.update(overrides)
    return c


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


def run_case(root, name, overrides, batch, length, give_mask, give_types, label_kind, seed):
    c = base_config(**overrides)
    generator = torch.Generator().manual_seed(seed)
    model = BertForSequenceClassification(c)
    randomize(model, generator)
    model.eval()  # dropout off: the C++ side compares in eval mode

    input_ids = torch.randint(0, c["vocab_size"], (batch, length), generator=generator)
    mask = torch.ones(batch, length, dtype=torch.long)
    for row in range(1, batch):  # right padding of different lengths; row 0 stays full
        keep = max(1, length - row - (row % 2))
        mask[row, keep:] = 0
        input_ids[row, keep:] = c["pad_token_id"]
    types = torch.randint(0, c["type_vocab_size"], (batch, length), generator=generator)
    labels = labels_for(label_kind, batch, len(c["id2label"]), generator) if label_kind else None

    logits, loss, hidden, pooled = model(input_ids, mask if give_mask else None, types if give_types else None, labels)
    if loss is not None:
        loss.backward()

    out_dir = os.path.join(root, "bert", name)
    os.makedirs(out_dir, exist_ok=True)
    write_text(os.path.join(out_dir, "config.json"), config_json(c))
    write_safetensors(os.path.join(out_dir, "model.safetensors"), dict(model.named_parameters()), {"format": "pt"})
    golden = {"input_ids": input_ids, "logits": logits, "last_hidden_state": hidden, "pooler_output": pooled}
    if give_mask:
        golden["attention_mask"] = mask
    if give_types:
        golden["token_type_ids"] = types
    if labels is not None:
        golden["labels"] = labels
        golden["loss"] = loss
        for pname, p in model.named_parameters():
            # A parameter the loss never reaches (e.g. an unused token type row still gets a zero grad) has
            # p.grad filled; one with no path at all would be None: write zeros, as berth's grad would be.
            golden["grad." + pname] = p.grad if p.grad is not None else torch.zeros_like(p)
    write_safetensors(os.path.join(out_dir, "golden.safetensors"), golden,
                      {"case": name, "attention_mask": str(give_mask).lower(),
                       "token_type_ids": str(give_types).lower()})
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


def tokenize_ascii(text, vocab_index):
    # BERT's basic tokenizer + greedy longest-match WordPiece, for lowercase-able ASCII text only (all this
    # script feeds it): lowercase, split on whitespace and around punctuation, then word pieces.
    words, current = [], ""
    for ch in text.lower():
        if ch.isspace():
            if current:
                words.append(current)
            current = ""
        elif not ch.isalnum():
            if current:
                words.append(current)
            words.append(ch)
            current = ""
        else:
            current += ch
    if current:
        words.append(current)
    ids = []
    for word in words:
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab_index:
                    break
                end -= 1
            if end == start:
                pieces = [vocab_index["[UNK]"]]
                break
            pieces.append(vocab_index[piece])
            start = end
        ids.extend(pieces)
    return ids


PREDICT_INPUTS = [
    {"text": "Congratulations! You win a free prize, click here now."},
    {"text": "Meeting tomorrow: please review the attached report."},
    {"text": "Cheap loans, guaranteed income!", "text_pair": "Act now, limited time offer."},
    {"text": "Hi team, the build is green", "text_pair": "thanks for the quick fix"},
    {"text": "Verify your bank account password here"},
]


def write_tiny_classifier(root):
    vocab = tiny_vocab()
    index = {piece: i for i, piece in enumerate(vocab)}
    c = base_config(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=48, max_position_embeddings=64, id2label={0: "ham", 1: "spam"})
    model = BertForSequenceClassification(c)
    randomize(model, torch.Generator().manual_seed(1234))
    model.eval()

    encoded = []
    for item in PREDICT_INPUTS:
        first = tokenize_ascii(item["text"], index)
        ids = [index["[CLS]"]] + first + [index["[SEP]"]]
        types = [0] * len(ids)
        if "text_pair" in item:
            second = tokenize_ascii(item["text_pair"], index) + [index["[SEP]"]]
            ids += second
            types += [1] * len(second)
        assert index["[UNK]"] not in ids, item
        encoded.append((ids, types))

    def logits_of(ids, types):
        with torch.no_grad():
            return model(torch.tensor([ids]), None, torch.tensor([types]))[0][0]

    # A random model puts every input in one class; centring the classifier's bias on these inputs makes the
    # predicted labels differ, so a test of `berth predict` also checks the id2label lookup.
    with torch.no_grad():
        model.classifier.bias -= torch.stack([logits_of(*e) for e in encoded]).mean(dim=0)

    out_dir = os.path.join(root, "tiny_bert_classifier")
    os.makedirs(out_dir, exist_ok=True)
    write_text(os.path.join(out_dir, "config.json"), config_json(c))
    write_safetensors(os.path.join(out_dir, "model.safetensors"), dict(model.named_parameters()), {"format": "pt"})
    write_text(os.path.join(out_dir, "vocab.txt"), "".join(piece + "\n" for piece in vocab))
    tokenizer_config = {"do_lower_case": True, "model_max_length": 64, "tokenizer_class": "BertTokenizer",
                        "strip_accents": None, "tokenize_chinese_chars": True, "cls_token": "[CLS]",
                        "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"}
    write_text(os.path.join(out_dir, "tokenizer_config.json"),
               json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n")

    predict_dir = os.path.join(root, "tiny_bert_classifier_predict")
    os.makedirs(predict_dir, exist_ok=True)
    expected = []
    for ids, types in encoded:
        logits = logits_of(ids, types)
        expected.append(json.dumps({"input_ids": ids, "token_type_ids": types,
                                    "label": c["id2label"][int(logits.argmax())], "logits": logits.tolist(),
                                    "probabilities": torch.softmax(logits, dim=-1).tolist()}))
    write_text(os.path.join(predict_dir, "input.jsonl"), "".join(json.dumps(item) + "\n" for item in PREDICT_INPUTS))
    write_text(os.path.join(predict_dir, "expected.jsonl"), "".join(line + "\n" for line in expected))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bert_goldens.py OUT_DIR")
    root = sys.argv[1]
    torch.manual_seed(0)
    names = [run_case(root, *case, seed=100 + i) for i, case in enumerate(CASES)]
    write_text(os.path.join(root, "bert", "cases.txt"), "".join(n + "\n" for n in names))
    write_tiny_classifier(root)
    write_text(os.path.join(root, "bert", "stamp"), "done\n")


if __name__ == "__main__":
    main()
