#!/usr/bin/env python3
# purpose: data goldens: HF transformers' DataCollatorWithPadding (transformers==5.24.0, pinned in
# scripts/requirements.txt) on features tokenised by HF's BertTokenizerFast from tests/fixtures/bert-base-uncased.
#
# Usage: scripts/python tests/goldens/data_collator_goldens.py TOKENIZER_JSON OUT_JSON. Writes one JSON object:
#   pad_token_id, pad_token_type_id  the tokenizer's, which the collator pads with
#   features  per row, as the tokenizer returned it (truncation=True, max_length=MAX_LENGTH, no padding):
#             input_ids, token_type_ids, attention_mask, label
#   batches   per batch: rows (indices into features), padding, pad_to_multiple_of (null or 8), and the
#             collator's output tensors as nested lists: input_ids, token_type_ids, attention_mask (B, T), labels (B,)
#   mlm       DataCollatorForLanguageModeling(mlm=True) on every row, once per setting (mlm_probability,
#             mask_replace_prob, random_replace_prob, seed: the collator's own torch.Generator, fresh): the
#             features' special_tokens_mask, mask_token_id, vocab_size (len(tokenizer)) and the masked
#             input_ids and labels (B, T); "whole_word": DataCollatorForLanguageModeling(whole_word_mask=True)
#             on the rows padded to MAX_LENGTH (the collator cannot pad offset_mapping itself), per setting
#             (mlm_probability, seed): the rows' offsets (B, T, 2), special_tokens_mask, input_ids and the
#             masked input_ids and labels

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import transformers  # noqa: E402
from transformers import BertTokenizerFast, DataCollatorForLanguageModeling, DataCollatorWithPadding  # noqa: E402

MAX_LENGTH = 24

# Lengths from 3 tokens to past MAX_LENGTH (truncated), single texts and pairs.
TEXTS = [
    ("Hi!", None),
    ("Free money, click here now to claim your prize.", None),
    ("Meeting tomorrow?", "Yes, at ten in room 4."),
    ("Unsubscribe", None),
    ("The quarterly report is attached; please review the budget section before Friday's call with the team.",
     None),
    ("Congratulations, you have been selected!", "Reply with your bank details to receive the cash."),
    ("ok", "ok"),
    ("Lunch at noon? The new place on Main Street has good soup.", None),
    ("a b c d e f g h i j k l m n o p q r s t u v w x y z", "z y x w v u"),
]

# Batches of different longest lengths: mixed, one row, one truncated row, all short, every row; and the rows in
# consecutive threes, as a DataLoader without shuffling batches them.
BATCHES = [[0, 1, 2], [3], [4, 0], [6, 3, 0], [5, 7, 8, 2], list(range(len(TEXTS))), [3, 4, 5], [6, 7, 8]]

# Masked-LM settings: HF's defaults, a heavy mix that draws every branch often, and mask-only (no random draw).
MLM_SETTINGS = [(0.15, 0.8, 0.1, 11), (0.5, 0.6, 0.3, 5), (0.4, 1.0, 0.0, 3)]


def mlm_batches(tokenizer):
    features = [dict(tokenizer(text, pair, truncation=True, max_length=MAX_LENGTH, return_special_tokens_mask=True))
                for text, pair in TEXTS]
    out = []
    for mlm_probability, mask_replace_prob, random_replace_prob, seed in MLM_SETTINGS:
        collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=mlm_probability,
                                                   mask_replace_prob=mask_replace_prob,
                                                   random_replace_prob=random_replace_prob, seed=seed,
                                                   return_tensors="pt")
        batch = collator([dict(f) for f in features])
        out.append({"mlm_probability": mlm_probability, "mask_replace_prob": mask_replace_prob,
                    "random_replace_prob": random_replace_prob, "seed": seed,
                    "special_tokens_mask": [f["special_tokens_mask"] for f in features],
                    "input_ids": batch["input_ids"].tolist(), "labels": batch["labels"].tolist()})
    return {"mask_token_id": tokenizer.mask_token_id, "vocab_size": len(tokenizer), "settings": out,
            "whole_word": whole_word_batches(tokenizer)}


# Words of several tokens ("unbelievably" is un ##bel ##ie ##va ##bly), punctuation touching a word, pairs.
WHOLE_WORD_TEXTS = TEXTS + [("Unbelievably fantastic tokenization, isn't it?", None),
                            ("Antidisestablishmentarianism!", "Hyperparameters (re)tuned overnight.")]


def whole_word_batches(tokenizer):
    features = [dict(tokenizer(text, pair, truncation=True, max_length=MAX_LENGTH, padding="max_length",
                               return_special_tokens_mask=True, return_offsets_mapping=True))
                for text, pair in WHOLE_WORD_TEXTS]
    out = []
    for mlm_probability, seed in [(0.15, 11), (0.5, 3), (0.9, 8)]:
        collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=mlm_probability,
                                                   whole_word_mask=True, seed=seed, return_tensors="pt")
        batch = collator([dict(f) for f in features])
        out.append({"mlm_probability": mlm_probability, "seed": seed,
                    "rows": [f["input_ids"] for f in features],
                    "offsets": [[list(pair) for pair in f["offset_mapping"]] for f in features],
                    "special_tokens_mask": [f["special_tokens_mask"] for f in features],
                    "input_ids": batch["input_ids"].tolist(), "labels": batch["labels"].tolist()})
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: data_collator_goldens.py TOKENIZER_JSON OUT_JSON")
    tokenizer = BertTokenizerFast(tokenizer_file=sys.argv[1])
    assert tokenizer.pad_token_id == 0 and tokenizer.padding_side == "right", (tokenizer.pad_token_id,
                                                                            tokenizer.padding_side)
    features = []
    for row, (text, pair) in enumerate(TEXTS):
        encoded = tokenizer(text, pair, truncation=True, max_length=MAX_LENGTH)
        features.append({"input_ids": encoded["input_ids"], "token_type_ids": encoded["token_type_ids"],
                         "attention_mask": encoded["attention_mask"], "label": row % 3})
    assert any(len(f["input_ids"]) == MAX_LENGTH for f in features), "one row should be truncated"

    batches = []
    for pad_to_multiple_of in (None, 8):
        collator = DataCollatorWithPadding(tokenizer, padding="longest", pad_to_multiple_of=pad_to_multiple_of,
                                           return_tensors="pt")
        for rows in BATCHES:
            out = collator([dict(features[r]) for r in rows])
            assert set(out.keys()) == {"input_ids", "token_type_ids", "attention_mask", "labels"}, out.keys()
            batches.append({"rows": rows, "padding": "longest", "pad_to_multiple_of": pad_to_multiple_of,
                            **{name: out[name].tolist() for name in sorted(out.keys())}})

    result = {"transformers_version": transformers.__version__, "pad_token_id": tokenizer.pad_token_id,
              "pad_token_type_id": tokenizer.pad_token_type_id, "max_length": MAX_LENGTH, "features": features,
              "batches": batches, "mlm": mlm_batches(tokenizer)}
    os.makedirs(os.path.dirname(os.path.abspath(sys.argv[2])), exist_ok=True)
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(result, out)
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
