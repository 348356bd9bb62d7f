#!/usr/bin/env python3
# purpose: goldens for berth's Tokenizer::encode_words from HF itself: transformers' tokenizer(words,
# is_split_into_words=True) (ids, word_ids, offsets) for bert-base-uncased (tests/fixtures) and the byte-level
# BPE pipelines hf_tokenizer_goldens.py builds (RoBERTa's, with add_prefix_space, and GPT-2's, without), on
# tokenizer_cases.jsonl's texts split at whitespace and a few hand-picked word lists, untruncated and truncated.
#
# usage: word_tokenizer_goldens.py CASES.jsonl HF_TOKENIZERS_DIR BERT_DIR OUT_DIR
# OUT_DIR/<name>/tokenizer.json is what berth loads; OUT_DIR/<name>/expected.jsonl one line per case:
# {"words", "max_length" (null: untruncated), "ids", "word_ids" (null as -1), "offsets"}. stamp is written last.
import json
import os
import shutil
import sys

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
from transformers import AutoTokenizer  # noqa: E402

cases_file, hf_dir, bert_dir, out_dir = sys.argv[1:5]
texts = [json.loads(line)["text"] for line in open(cases_file, encoding="utf-8") if line.strip()]
word_lists = [t.split() for t in texts if t.split()]
word_lists += [["EU", "rejects", "German", "call"], ["Zoë", "naïve", "12,5", "spam", "don't"], ["x"],
               ["", "a", ""], ["東京", "タワー", "🙂"], ["<mask>", "<s>", "hello"], ["UNwantéd", ",", "running"]]

# name: (tokenizer.json, tokenizer_config.json)
directories = {
    "bert-base-uncased": (os.path.join(bert_dir, "tokenizer.json"),
                          {"tokenizer_class": "BertTokenizer", "do_lower_case": True}),
    "roberta": (os.path.join(hf_dir, "roberta", "tokenizer.json"),
                {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
                 "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>"}),
    "gpt2": (os.path.join(hf_dir, "gpt2", "tokenizer.json"),
             {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}),
}

for name, (source, config) in directories.items():
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    shutil.copyfile(source, os.path.join(directory, "tokenizer.json"))
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    lines = []
    for words in word_lists:
        for max_length in (None, 8):
            out = tokenizer(words, is_split_into_words=True, return_offsets_mapping=True,
                            truncation=max_length is not None, max_length=max_length)
            lines.append(json.dumps({"words": words, "max_length": max_length, "ids": out["input_ids"],
                                     "word_ids": [-1 if w is None else w for w in out.word_ids()],
                                     "offsets": [list(o) for o in out["offset_mapping"]]}))
    with open(os.path.join(directory, "expected.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
with open(os.path.join(out_dir, "stamp"), "w", encoding="utf-8") as f:
    f.write("done\n")
