#!/usr/bin/env python3
# purpose: goldens for berth's token-classification batches from transformers itself: bert-base-uncased's
# tokenizer(words, is_split_into_words=True, truncation=True, max_length=12) with run_ner.py's
# tokenize_and_align_labels (label_all_tokens=False: the first sub-token of each word gets the word's tag, the
# rest and special tokens -100), batched by DataCollatorForTokenClassification (pad to the longest, or to a
# multiple of 8), for a few row sets.
#
# usage: token_collator_goldens.py BERT_DIR OUT.json
import json
import os
import sys

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
from transformers import BertTokenizerFast, DataCollatorForTokenClassification  # noqa: E402

ROWS = [
    (["EU", "rejects", "German", "call"], [3, 0, 1, 0]),
    (["unaffable", "Zoë", "paid", "12,500"], [0, 2, 0, 4]),
    (["x"], [0]),
    (["hyperparameterisation", "of", "tokenization", "is", "unaffable", "indeed", "my", "friend"],
     [1, 0, 1, 0, 2, 0, 0, 3]),
]
BATCHES = [([0, 1], None), ([2, 3, 0], None), ([2], 8), ([3, 1], 8)]


def main():
    bert_dir, out = sys.argv[1:3]
    tokenizer = BertTokenizerFast(tokenizer_file=os.path.join(bert_dir, "tokenizer.json"))
    features = []
    for words, tags in ROWS:
        encoded = tokenizer(words, is_split_into_words=True, truncation=True, max_length=12)
        labels, previous = [], None
        for word in encoded.word_ids():  # run_ner.py's alignment, label_all_tokens=False
            labels.append(-100 if word is None or word == previous else tags[word])
            previous = word
        encoded["labels"] = labels
        features.append(dict(encoded))
    cases = []
    for rows, multiple in BATCHES:
        collator = DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=multiple, return_tensors="pt")
        batch = collator([features[i] for i in rows])
        cases.append({"rows": rows, "pad_to_multiple_of": multiple or 0,
                      **{k: batch[k].tolist() for k in ("input_ids", "attention_mask", "labels")}})
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump({"rows": [{"words": w, "tags": t} for w, t in ROWS], "max_length": 12, "batches": cases}, f)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
