# The Unigram pipelines of berth's goldens, built with HF tokenizers (PyPI) and SentencePiece (PyPI): XLM-R's
# shape (SentencePiece's nmt_nfkc charsmap as a Precompiled normalizer, Replace(" {2,}" -> " "), Metaspace,
# a Unigram model, <s> A </s></s> B </s>, a Metaspace decoder) with a vocabulary UnigramTrainer learns from
# SpamAssassin emails, and the same model with <0xXX> byte tokens and byte_fallback.
# Imported by hf_tokenizer_goldens.py and unigram_goldens.py.
import functools
import io
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>"]


@functools.lru_cache(maxsize=None)
def nmt_nfkc_charsmap():
    # SentencePiece compiles its normalization rules into every model it trains: a throwaway model's
    # normalizer_spec holds the real nmt_nfkc precompiled_charsmap (the one XLM-R, mBART and T5 carry).
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["a throwaway corpus for the charsmap"] * 20), model_writer=model, vocab_size=30,
        hard_vocab_limit=False, normalization_rule_name="nmt_nfkc", minloglevel=2)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


def spam_emails(modules, every, remainder):
    # (group/file, text) of every `every`-th SpamAssassin email of each group, from the `remainder`-th on.
    root = os.path.join(modules, "@stdlib", "datasets-spam-assassin", "data")
    out = []
    for group in ["easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"]:
        files = sorted(f for f in os.listdir(os.path.join(root, group)) if f.endswith(".json"))
        for i, name in enumerate(files):
            if i % every == remainder:
                with open(os.path.join(root, group, name), encoding="utf-8") as f:
                    out.append((group + "/" + name, json.load(f)["text"]))
    return out


def xlmr_shell(model):
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(nmt_nfkc_charsmap()), normalizers.Replace(Regex(" {2,}"), " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    return tokenizer


@functools.lru_cache(maxsize=None)
def trained_vocab(modules):
    # ~8000 pieces learnt from every twelfth email (starting at the third: none of the emails the goldens
    # encode, which are every sixth from the first), normalized and pre-tokenized by the pipeline itself.
    tokenizer = xlmr_shell(models.Unigram())
    trainer = trainers.UnigramTrainer(vocab_size=8000, special_tokens=SPECIAL_TOKENS, unk_token="<unk>",
                                      show_progress=False)
    tokenizer.train_from_iterator([text for _, text in spam_emails(modules, 12, 3)], trainer)
    model = json.loads(tokenizer.to_str())["model"]
    return tuple((piece, score) for piece, score in model["vocab"]), model["unk_id"]


def finish(tokenizer):
    # XLM-R's specials: the vocabulary's four matched in raw text, <mask> after the vocabulary.
    tokenizer.add_special_tokens(SPECIAL_TOKENS + [AddedToken("<mask>", lstrip=True, special=True)])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tokenizer.token_to_id("<s>")), ("</s>", tokenizer.token_to_id("</s>"))])
    return tokenizer


def xlmr_unigram(modules):
    vocab, unk_id = trained_vocab(modules)
    return finish(xlmr_shell(models.Unigram(list(vocab), unk_id, False)))


def unigram_byte_fallback(modules):
    # The same pieces plus SentencePiece's 256 byte tokens (score 0, as SentencePiece gives them): a code
    # point outside the vocabulary becomes its UTF-8 bytes instead of <unk>.
    vocab, unk_id = trained_vocab(modules)
    pieces = list(vocab) + [("<0x%02X>" % b, 0.0) for b in range(256)]
    return finish(xlmr_shell(models.Unigram(pieces, unk_id, True)))
