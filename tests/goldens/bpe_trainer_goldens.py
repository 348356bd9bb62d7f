# Goldens for berth's BPE trainer from HF tokenizers itself (PyPI `tokenizers`): HF's BpeTrainer trains a
# Tokenizer(models.BPE()) behind pre_tokenizers.ByteLevel on a corpus of SpamAssassin emails, read as HF's
# Tokenizer.train(files) reads it (line by line, line endings kept), at three settings: the ByteLevelBPETokenizer
# recipe (initial alphabet = ByteLevel.alphabet()) with RoBERTa's special tokens; a prefix space with a
# min_frequency that stops training before vocab_size; and a limited alphabet with max_token_length.
# Each setting is trained twice and must come out the same (HF breaks some ties by hash order).
# usage: python bpe_trainer_goldens.py NODE_MODULES OUT_DIR
# OUT_DIR/bpe_trainer_corpus.txt is the corpus; bpe_trainer_golden.json holds each setting's options, vocab (id
# order) and merges (rank order); bpe_trainer_<name>/tokenizer.json is HF's own file for the settings berth
# writes a directory for, and bpe_trainer_<name>/encodings.jsonl what that tokenizer makes of held-out emails.
import json
import os
import sys
import time

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

modules, out_dir = sys.argv[1:3]
os.makedirs(out_dir, exist_ok=True)


def emails(keep):
    root = os.path.join(modules, "@stdlib", "datasets-spam-assassin", "data")
    out = []
    for group in ["easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"]:
        files = sorted(f for f in os.listdir(os.path.join(root, group)) if f.endswith(".json"))
        for i, name in enumerate(files):
            if keep(i):
                out.append(json.load(open(os.path.join(root, group, name), encoding="utf-8"))["text"])
    return out


# Every twelfth email (about 2.9 MB), each ending in a line break; the emails in between are held out.
corpus = os.path.join(out_dir, "bpe_trainer_corpus.txt")
with open(corpus + ".tmp", "w", encoding="utf-8", newline="") as f:
    f.write("".join(t if t.endswith("\n") else t + "\n" for t in emails(lambda i: i % 12 == 0)))
os.replace(corpus + ".tmp", corpus)
held_out = emails(lambda i: i % 120 == 6)

settings = [
    {"name": "roberta", "vocab_size": 2000, "min_frequency": 2,
     "special_tokens": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "limit_alphabet": None,
     "initial_alphabet": True, "add_prefix_space": False, "max_token_length": None, "write": True},
    {"name": "prefix_space", "vocab_size": 30000, "min_frequency": 20, "special_tokens": ["<|endoftext|>"],
     "limit_alphabet": None, "initial_alphabet": True, "add_prefix_space": True, "max_token_length": None,
     "write": True},
    {"name": "limit_alphabet", "vocab_size": 5000, "min_frequency": 0, "special_tokens": [],
     "limit_alphabet": 100, "initial_alphabet": False, "add_prefix_space": True, "max_token_length": 8,
     "write": False},
]


def train(setting):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=setting["add_prefix_space"],
                                                       use_regex=True)
    options = {"vocab_size": setting["vocab_size"], "min_frequency": setting["min_frequency"],
               "special_tokens": setting["special_tokens"], "show_progress": False}
    if setting["initial_alphabet"]:
        options["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet()
    if setting["limit_alphabet"] is not None:
        options["limit_alphabet"] = setting["limit_alphabet"]
    if setting["max_token_length"] is not None:
        options["max_token_length"] = setting["max_token_length"]
    start = time.perf_counter()
    tokenizer.train([corpus], trainers.BpeTrainer(**options))
    seconds = time.perf_counter() - start
    model = json.loads(tokenizer.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda item: item[1])
    if [i for _, i in vocab] != list(range(len(vocab))):
        raise SystemExit("bpe_trainer_goldens: HF's vocabulary ids are not 0..n-1")
    return tokenizer, [t for t, _ in vocab], model["merges"], seconds


results = []
for setting in settings:
    tokenizer, vocab, merges, seconds = train(setting)
    _, again_vocab, again_merges, _ = train(setting)
    if (vocab, merges) != (again_vocab, again_merges):
        raise SystemExit("bpe_trainer_goldens: HF trained two different vocabularies for " + setting["name"] +
                         " (a tie broken by hash order). Fix: choose settings without such ties")
    results.append({**setting, "vocab": vocab, "merges": merges, "hf_seconds": seconds})
    if setting["write"]:
        # The directory berth writes: ByteLevel decoder, ByteLevel post-processor trimming offsets (its prefix
        # space as the pre-tokenizer's), the special tokens as added tokens (HF's Tokenizer.train adds them).
        directory = os.path.join(out_dir, "bpe_trainer_" + setting["name"])
        os.makedirs(directory, exist_ok=True)
        tokenizer.decoder = decoders.ByteLevel()
        tokenizer.post_processor = processors.ByteLevel(add_prefix_space=setting["add_prefix_space"],
                                                        trim_offsets=True)
        tokenizer.save(os.path.join(directory, "tokenizer.json"))
        with open(os.path.join(directory, "encodings.jsonl.tmp"), "w", encoding="utf-8") as f:
            for text, encoding in zip(held_out, tokenizer.encode_batch(held_out)):
                f.write(json.dumps({"text": text, "ids": encoding.ids,
                                    "offsets": [x for o in encoding.offsets for x in o]}) + "\n")
        os.replace(os.path.join(directory, "encodings.jsonl.tmp"), os.path.join(directory, "encodings.jsonl"))

golden = os.path.join(out_dir, "bpe_trainer_golden.json")
with open(golden + ".tmp", "w", encoding="utf-8") as f:
    json.dump({"corpus": "bpe_trainer_corpus.txt", "settings": results}, f, ensure_ascii=False)
os.replace(golden + ".tmp", golden)
