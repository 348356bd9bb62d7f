# Component goldens for berth's Unigram model, Precompiled normalizer and pipeline BertNormalizer, from HF
# tokenizers itself (PyPI): what each one alone computes, so a difference points at one component.
# usage: python unigram_goldens.py NODE_MODULES CASES.jsonl OUT_DIR
# OUT_DIR gets:
#   <family>.json              the tokenizer.json of each Unigram pipeline (unigram_pipelines.py)
#   unigram_pieces.jsonl       model.tokenize(piece) of every distinct pre-tokenized piece of every case, of every
#                              twelfth email and of hand-picked edge pieces: ids and byte offsets
#   unigram_edge_models.jsonl  small models for the model's corners: HF's tokens of some pieces, or its refusal
#   normalizers.json           the normalizers below by name, as tokenizer.json writes them
#   normalizer_codepoints.jsonl  every code point a normalizer changes, as runs of code points that change alike
#   normalizer_pairs.jsonl     two-code-point strings whose normalization is not that of their code points
#                              one by one (grapheme clusters under Precompiled), and a few longer clusters
#   normalizer_texts.jsonl     every case, email and edge text: the normalized text (emails: its FNV-1a 64 hash)
#                              and each normalized code point's original range (of the emails, every 24th's)
import json
import os
import sys

from tokenizers import PreTokenizedString, Regex, Tokenizer, models, normalizers

import unigram_pipelines

modules, cases_file, out_dir = sys.argv[1:4]
os.makedirs(out_dir, exist_ok=True)
cases = [json.loads(line) for line in open(cases_file, encoding="utf-8") if line.strip()]
emails = unigram_pipelines.spam_emails(modules, 1, 0)


def write_jsonl(name, rows):
    with open(os.path.join(out_dir, name + ".tmp"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(os.path.join(out_dir, name + ".tmp"), os.path.join(out_dir, name))


def case_texts():
    for index, case in enumerate(cases):
        for field in ("text", "text_pair"):
            if field in case:
                yield {"case": index, "field": field}, case[field]


# Pieces that reach the model's corners: unknown runs (fused), the unk piece's own text next to unknown code
# points, a byte token's text, an empty-looking piece, long repeats, near-ties.
EDGE_PIECES = ["\u2581", "\u2581\u2581", "<unk>", "\u2581<unk>", "\u4e2d<unk>\u6587", "x<unk>", "<0x41>",
               "\u2581<0x41><0xE4>", "\u4e2d\u6587\u5b57", "a\u4e2db\u6587c", "\U0001F600\U0001F600",
               "\u2581" + "a" * 300, "\u0301\u0301", "\u2581\u00e9\u00e8\u00ea", "<s></s>", "\u2581\uFFFD",
               # Ties in exact arithmetic between the same pieces in another order, decided by the last bit
               # of scores as serde_json reads them (SpamAssassin emails 53 and 66 under XLM-R's vocabulary).
               "\u2581wanted" + "." * 36, "QAAAAEAAAAAAAAAAgFHA", "AAAAAAAAAAEAAAAAAAAAA"]


def unigram_pieces():
    rows = []
    texts = [text for _, text in case_texts()] + [text for _, text in emails[::12]]
    for family, make in (("xlmr-unigram", unigram_pipelines.xlmr_unigram),
                         ("unigram-byte-fallback", unigram_pipelines.unigram_byte_fallback)):
        make(modules).save(os.path.join(out_dir, family + ".json"))
        # As a user loads it: through serde_json's float parsing (see hf_tokenizer_goldens.py).
        tokenizer = Tokenizer.from_file(os.path.join(out_dir, family + ".json"))
        pieces = set(EDGE_PIECES)
        for text in texts:
            normalized = tokenizer.normalizer.normalize_str(text)
            pieces.update(piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized))
        for piece in sorted(pieces):
            tokens = tokenizer.model.tokenize(piece)
            rows.append({"family": family, "piece": piece, "ids": [t.id for t in tokens],
                         "offsets": [x for t in tokens for x in t.offsets]})
    write_jsonl("unigram_pieces.jsonl", rows)
    write_jsonl("unigram_edge_models.jsonl", edge_model_rows())


# Small models for the corners HF's Unigram has: a repeated piece (its last id and score), the unk piece not
# first, some byte tokens only, no unk_id (unknown code points are errors), ties between paths, an unknown
# code point cheaper than a known one, all 256 byte tokens, an empty piece, no pieces, an unk_id outside.
EDGE_MODELS = [
    ([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("a", -0.5), ("ab", -3.0)], 0, False),
    ([("a", -1.0), ("<unk>", 0.0), ("<0xC3>", -5.0), ("<0xA9>", -5.0)], 1, True),
    ([("a", -1.0), ("b", -1.0)], None, False),
    ([("<unk>", 0.0), ("a", 1.0), ("b", 1.0), ("ab", 2.0)], 0, False),
    ([("<unk>", 0.0), ("a", -100.0), ("b", -1.0), ("x", -200.0)], 0, False),
    ([("<unk>", 0.0), ("a", -1.0)] + [("<0x%02X>" % b, -2.0) for b in range(256)], 0, True),
    ([("<unk>", 0.0), ("", -1.0), ("a", -1.0)], 0, False),
    ([], None, False),
    ([("<unk>", 0.0)], 1, False),
]
EDGE_MODEL_PIECES = ["a", "b", "ab", "ba", "aab", "\u00e9", "\u00fc", "\u00e9\u00fc", "x", "xx", "xax", "<unk>",
                     "x<unk>", "<unk>x", "a<unk>b", "ax\u00e9b", "\u4e2d\u6587", "<0x41>"]


def edge_model_rows():
    rows = []
    for vocab, unk_id, byte_fallback in EDGE_MODELS:
        model = {"type": "Unigram", "unk_id": unk_id, "vocab": [list(v) for v in vocab], "byte_fallback": byte_fallback}
        try:
            tokenizer = Tokenizer(models.Unigram(vocab, unk_id, byte_fallback))
        except Exception as error:  # HF refuses the model; berth must too
            rows.append({"model": model, "error": str(error)})
            continue
        results = []
        for piece in EDGE_MODEL_PIECES:
            try:
                tokens = tokenizer.model.tokenize(piece)
                results.append({"piece": piece, "ids": [t.id for t in tokens],
                                "offsets": [x for t in tokens for x in t.offsets]})
            except Exception as error:
                results.append({"piece": piece, "error": str(error)})
        rows.append({"model": json.loads(tokenizer.to_str())["model"], "pieces": results})
    return rows


def named_normalizers():
    precompiled = normalizers.Precompiled(unigram_pipelines.nmt_nfkc_charsmap())
    return {
        "precompiled": precompiled,
        "xlmr": normalizers.Sequence([precompiled, normalizers.Replace(Regex(" {2,}"), " ")]),
        "bert-uncased": normalizers.BertNormalizer(),
        "bert-cased": normalizers.BertNormalizer(lowercase=False),
        "bert-strip-only": normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                                      strip_accents=True, lowercase=False),
        "bert-lowercase-keep-accents": normalizers.BertNormalizer(strip_accents=False, lowercase=True),
        # Replace's alignment (the replacement takes the last matched code point's range) where it shows:
        # Llama 2's normalizer, and runs of whitespace squeezed between other steps.
        "llama2": normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]),
        "squeeze-whitespace": normalizers.Sequence(
            [normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents(),
             normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]),
    }


def as_json(normalizer):
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizer
    return json.loads(tokenizer.to_str())["normalizer"]


def code_points():
    return [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def codepoint_rows(name, normalizer):
    # Runs of consecutive code points that change alike: to the same text, where U+0000 stands for the code
    # point itself ("out"; CJK ideographs gain spaces), or to the code point `shift` away (lowercase).
    rows = []
    for cp in code_points():
        out = normalizer.normalize_str(chr(cp))
        if out == chr(cp):
            continue
        assert "\0" not in out
        change = {"shift": ord(out) - cp} if len(out) == 1 else {"out": out.replace(chr(cp), "\0")}
        last = rows[-1] if rows else None
        if last and last["last"] == cp - 1 and {k: last[k] for k in ("shift", "out") if k in last} == change:
            last["last"] = cp
        else:
            rows.append({"normalizer": name, "first": cp, "last": cp, **change})
    return rows


# Longer clusters: GB9c (consonant, virama, [ZWJ,] consonant is one cluster, too long to look up whole; without
# the first consonant U+0958 starts a short one), CR LF, emoji ZWJ and regional-indicator runs, marks after a
# mapped base, a prepended mark.
EXTRA_CLUSTERS = ["\u0915\u094d\u0958\u0301", "\u0915\u094d\u200d\u0958\u0301", "a\u094d\u0958\u0301",
                  "\u0915\u0958\u0301", "\r\n", "a\r\n\u0301", "\u00a9\u200d\u00a9", "\u00aa\u0301\u0301",
                  "\U0001F1E6\U0001F1E8\U0001F1E6", "\u0600\u00aa", "\u00aa\u200d\u0301", "\u1100\u1161\u11a8"]


def pair_rows(name, normalizer):
    # A cluster under 6 bytes is looked up whole: around a base that maps ("a" composes with marks, U+00AA
    # maps to "a") and before a mark, each code point shows whether it joins the cluster.
    single = {}

    def one(s):
        if s not in single:
            single[s] = normalizer.normalize_str(s)
        return single[s]

    rows = []
    for cp in code_points():
        c = chr(cp)
        candidates = [("a", c), (c, "a")]
        if cp < 0x10000:
            candidates += [("\u00aa", c), (c, "\u0301")]
        for left, right in candidates:
            text = left + right
            out = normalizer.normalize_str(text)
            if out != one(left) + one(right):
                rows.append({"normalizer": name, "text": text, "out": out})
    return rows + [{"normalizer": name, "text": text, "out": normalizer.normalize_str(text)} for text in EXTRA_CLUSTERS]


def fnv1a(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


EVERY_CODE_POINT = Regex(r"[\s\S]")


def alignment(normalizer, text):
    # Each normalized code point's original range (code points) as runs [i, begin, end]: code point i + k of
    # the run spans [begin + k, end + k).
    pretokenized = PreTokenizedString(text)
    pretokenized.normalize(lambda normalized: normalizer.normalize(normalized))
    pretokenized.split(lambda _, normalized: normalized.split(EVERY_CODE_POINT, "isolated"))
    runs = []
    for i, (_, (begin, end), _) in enumerate(pretokenized.get_splits(offset_referential="original",
                                                                   offset_type="char")):
        if runs:
            j, b, e = runs[-3:]
            if begin == b + (i - j) and end == e + (i - j):
                continue
        runs += [i, begin, end]
    return runs


# Texts whose alignments take HF's odd paths: a removal charged to an insertion before it, a removal with
# nothing before it (every later code point then takes its predecessor's range), expansions, clusters.
EDGE_TEXTS = ["\u2122\x1eg", "\x1eabc", "\x1e\x1eab", "\ufb01\x1e", "a\u0301\x1e", "\x1e", "",
              "\uff45\u0301x", "\u3000\u3000a  b", "\r\n\r\n", "\u0600a\u00aa\u0301"]


def text_rows(name, normalizer):
    rows = [{"normalizer": name, "text": text, "normalized": normalizer.normalize_str(text),
             "alignment": alignment(normalizer, text)} for text in EDGE_TEXTS]
    for source, text in case_texts():
        rows.append({"normalizer": name, **source, "normalized": normalizer.normalize_str(text),
                     "alignment": alignment(normalizer, text)})
    for i, (file, text) in enumerate(emails):
        row = {"normalizer": name, "file": file, "fnv1a": fnv1a(normalizer.normalize_str(text))}
        if i % 24 == 0:
            row["alignment"] = alignment(normalizer, text)
        rows.append(row)
    return rows


def normalizer_goldens():
    named = named_normalizers()
    with open(os.path.join(out_dir, "normalizers.json"), "w", encoding="utf-8") as f:
        json.dump({name: as_json(n) for name, n in named.items()}, f, ensure_ascii=False, indent=1)
    codepoints, pairs, texts = [], [], []
    for name, normalizer in named.items():
        if name not in ("xlmr", "llama2", "squeeze-whitespace"):  # their own goldens cover the code points
            codepoints += codepoint_rows(name, normalizer)
        if name == "precompiled":
            pairs += pair_rows(name, normalizer)
        texts += text_rows(name, normalizer)
    write_jsonl("normalizer_codepoints.jsonl", codepoints)
    write_jsonl("normalizer_pairs.jsonl", pairs)
    write_jsonl("normalizer_texts.jsonl", texts)


normalizer_goldens()
unigram_pieces()
with open(os.path.join(out_dir, "stamp"), "w") as f:
    f.write("unigram goldens\n")
