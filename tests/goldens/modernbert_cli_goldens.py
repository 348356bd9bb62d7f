#!/usr/bin/env python3
# purpose: ModernBERT through the CLI, from HF itself: a byte-level BPE tokenizer trained by HF tokenizers on
# short ham/spam sentences, a tiny random ModernBertForSequenceClassification over it (eager attention, mean
# pooling, a local window of 4 that cuts the longer sentences), and its logits on padded batches.
#
# Usage: scripts/python tests/goldens/modernbert_cli_goldens.py OUT_DIR. Offline: nothing is downloaded.
# Writes OUT_DIR/data.jsonl ({"text", "label"} per line, labels "ham"/"spam"), OUT_DIR/model/ (config.json,
# model.safetensors, tokenizer.json, tokenizer_config.json) and OUT_DIR/expected.json ({"logits": [[...]]}, one
# row per line of data.jsonl, computed in one padded batch); stamp is written last.

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

transformers.utils.logging.disable_progress_bar()

SPAM = ["free prize click here now", "win cash offer today only for you", "cheap loans click now",
        "claim your free gift card before it expires tonight"]
HAM = ["meeting tomorrow review report", "the build is green team", "please review the attached report",
       "lunch at noon then we plan the release notes together"]


def sentences():
    rows = []
    for i in range(16):
        spam = i % 2 == 0
        pool = SPAM if spam else HAM
        rows.append({"text": pool[(i // 2) % len(pool)], "label": "spam" if spam else "ham"})
    return rows


def train_tokenizer(texts):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>",
                                                eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                                model_max_length=32)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: modernbert_cli_goldens.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rows = sentences()
    texts = [row["text"] for row in rows]
    tokenizer = train_tokenizer(texts)
    config = transformers.ModernBertConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        local_attention=4, max_position_embeddings=64, classifier_pooling="mean",
        id2label={0: "ham", 1: "spam"}, label2id={"ham": 0, "spam": 1},
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
        cls_token_id=tokenizer.bos_token_id, sep_token_id=tokenizer.eos_token_id, attn_implementation="eager")
    torch.manual_seed(2)
    model = transformers.ModernBertForSequenceClassification(config).eval()
    batch = tokenizer(texts, truncation=True, max_length=32, padding=True, return_tensors="pt")
    batch.pop("token_type_ids", None)
    with torch.no_grad():
        logits = model(**batch).logits
    model.save_pretrained(os.path.join(out, "model"))
    tokenizer.save_pretrained(os.path.join(out, "model"))
    with open(os.path.join(out, "data.jsonl"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"logits": logits.tolist()}, f)
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write("done\n")


if __name__ == "__main__":
    main()
