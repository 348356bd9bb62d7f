#!/usr/bin/env python3
# purpose: extractive question-answering goldens: run_qa.py's preprocessing (prepare_train_features and
# prepare_validation_features of transformers' examples/pytorch/question-answering/run_qa.py) applied with the real
# HF fast tokenizers (transformers' AutoTokenizer, transformers==5.24.0 pinned in scripts/requirements.txt) to
# synthetic and real-text SQuAD-style examples, and utils_qa.py's postprocess_qa_predictions over logits drawn
# here. run_qa.py and utils_qa.py are example scripts in transformers' repository, not an installable package:
# the few lines of their algorithms are followed below step by step (numpy, as utils_qa.py uses it), and the
# tokenizer, which does the real work, is HF's own.
#
# Usage: scripts/python tests/goldens/question_answering_goldens.py BERT_TOKENIZER_DIR NODE_MODULES OUT_DIR
# Offline: tokenizers and models are built here, never downloaded. OUT_DIR/question_answering/ holds
#   examples.jsonl          the examples in HF datasets' squad layout (id, title, question, context, answers)
#   roberta_tokenizer/      a byte-level BPE tokenizer with RoBERTa's special tokens, trained on the contexts
#   features_<case>.json    per case: tokenizer, max_length, doc_stride, padding and every feature (input_ids,
#                           token_type_ids, attention_mask, start/end positions, example index, context offsets)
#   postprocess.json        logits for the features of case bert_48, and utils_qa.py's predictions for them
#                           (SQuAD v1 and v2 at two thresholds, n_best_size and max_answer_length varied)
#   distilbert_tiny/        a tiny random DistilBertForQuestionAnswering with bert-base-uncased's tokenizer
# stamp is written last.

import collections
import json
import os
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402

FILLER = ("The committee met on a grey morning to review the plans for the new bridge across the river. "
          "Several engineers argued that the older design would last longer, while others preferred the "
          "lighter steel frame proposed in the spring. ")


def example(eid, question, context, answers, title="synthetic"):
    starts = []
    for text in answers:
        start = context.find(text)
        assert start >= 0, (eid, text)
        starts.append(start)
    return {"id": eid, "title": title, "question": question, "context": context,
            "answers": {"text": list(answers), "answer_start": starts}}


def synthetic_examples():
    long_context = FILLER * 3 + "The bridge finally opened in 1932 after many delays. " + FILLER * 2
    out = [
        example("short", "When did it open?", "The bridge opened in 1932 to great applause.", ["1932"]),
        example("start", "Who spoke first?", "Margaret spoke first, and then the mayor replied.", ["Margaret"]),
        example("end", "What did they build?", "After years of planning they finally built a lighthouse",
                ["a lighthouse"]),
        example("long_middle", "When did the bridge open?", long_context, ["1932", "in 1932"]),
        example("long_start", "   Who met on a grey morning?", FILLER * 4, ["The committee"]),
        example("long_end", "What was proposed in the spring?", FILLER * 3 + "In the end they chose the copper roof.",
                ["the copper roof"]),
        example("unicode", "Where is the café?",
                "Die naïve Idee: das Café liegt in Zürich 🙂 nahe 東京駅 und ist sehr beliebt.", ["Zürich"]),
        example("unicode_cjk", "Which station?", "Die naïve Idee: das Café liegt in Zürich 🙂 nahe 東京駅 und ist beliebt.",
                ["東京駅"]),
        example("no_answer", "Who painted the roof?", FILLER * 2, []),
        # Several windows even at run_qa.py's 384 tokens.
        example("very_long", "What colour was the gate?", FILLER * 9 + "The gate was painted dark green. " + FILLER * 3,
                ["dark green"]),
    ]
    # An answer cut by the first window's end: found by its position in the tokenised context in main().
    return out


def email_examples(modules):
    root = os.path.join(modules, "@stdlib", "datasets-spam-assassin", "data", "easy-ham-1")
    if not os.path.isdir(root):
        return []
    out = []
    files = sorted(f for f in os.listdir(root) if f.endswith(".json"))[:200:40]
    for n, name in enumerate(files):
        text = json.load(open(os.path.join(root, name), encoding="utf-8"))["text"][:1500]
        words = [w for w in text.split() if w.isalpha() and len(w) > 4]
        if not words:
            continue
        answer = words[len(words) // 2]
        out.append(example("email_%d" % n, "Which word is in the middle?", text, [answer], title="spamassassin"))
    return out


def cut_example(tokenizer, max_length):
    # A context whose answer starts inside the first window and ends after it.
    question = "What is the long name?"
    context = FILLER + "Its full name is the Northern Royal Highway Suspension Bridge of the Valley."
    enc = tokenizer(question, context, truncation="only_second", max_length=max_length, return_offsets_mapping=True)
    seq = enc.sequence_ids()
    last = max(k for k, s in enumerate(seq) if s == 1)
    start = enc["offset_mapping"][last - 1][0]
    answer = context[start:start + 40]
    return {"id": "cut_by_window", "title": "synthetic", "question": question, "context": context,
            "answers": {"text": [answer], "answer_start": [start]}}


def roberta_tokenizer(texts, out_dir):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=600, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                      add_prefix_space=False)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                                cls_token="<s>", sep_token="</s>", pad_token="<pad>",
                                                unk_token="<unk>", mask_token="<mask>", model_max_length=512)
    fast.save_pretrained(out_dir)
    return fast


def tokenize(tokenizer, examples, max_length, stride, pad):
    # run_qa.py: questions lstripped, pad on the right (question first), only_second truncation with stride.
    questions = [e["question"].lstrip() for e in examples]
    return tokenizer(questions, [e["context"] for e in examples], truncation="only_second", max_length=max_length,
                     stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True,
                     padding="max_length" if pad else False)


def train_positions(tokenizer, examples, enc):
    # run_qa.py's prepare_train_features, line by line.
    starts, ends = [], []
    for i, offsets in enumerate(enc["offset_mapping"]):
        input_ids = enc["input_ids"][i]
        if tokenizer.cls_token_id in input_ids:
            cls_index = input_ids.index(tokenizer.cls_token_id)
        elif tokenizer.bos_token_id in input_ids:
            cls_index = input_ids.index(tokenizer.bos_token_id)
        else:
            cls_index = 0
        sequence_ids = enc.sequence_ids(i)
        answers = examples[enc["overflow_to_sample_mapping"][i]]["answers"]
        if len(answers["answer_start"]) == 0:
            starts.append(cls_index)
            ends.append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        token_start_index = 0
        while sequence_ids[token_start_index] != 1:
            token_start_index += 1
        token_end_index = len(input_ids) - 1
        while sequence_ids[token_end_index] != 1:
            token_end_index -= 1
        if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
            starts.append(cls_index)
            ends.append(cls_index)
        else:
            while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                token_start_index += 1
            starts.append(token_start_index - 1)
            while offsets[token_end_index][1] >= end_char:
                token_end_index -= 1
            ends.append(token_end_index + 1)
    return starts, ends


def features(tokenizer, examples, max_length, stride, pad):
    enc = tokenize(tokenizer, examples, max_length, stride, pad)
    starts, ends = train_positions(tokenizer, examples, enc)
    out = []
    for i in range(len(enc["input_ids"])):
        # run_qa.py's prepare_validation_features: the example, and offsets of context tokens only.
        sequence_ids = enc.sequence_ids(i)
        offsets = [list(o) if sequence_ids[k] == 1 else None for k, o in enumerate(enc["offset_mapping"][i])]
        out.append({"input_ids": enc["input_ids"][i], "token_type_ids": enc["token_type_ids"][i]
                    if "token_type_ids" in enc else [0] * len(enc["input_ids"][i]),
                    "attention_mask": enc["attention_mask"][i], "start_position": starts[i],
                    "end_position": ends[i], "example_index": enc["overflow_to_sample_mapping"][i],
                    "offsets": offsets})
    return out


def postprocess(examples, feats, all_start_logits, all_end_logits, version_2_with_negative, n_best_size,
                max_answer_length, null_score_diff_threshold):
    # utils_qa.py's postprocess_qa_predictions (without its file output), step by step.
    features_per_example = collections.defaultdict(list)
    for i, feature in enumerate(feats):
        features_per_example[feature["example_index"]].append(i)
    out = []
    for example_index, ex in enumerate(examples):
        min_null_prediction = None
        prelim_predictions = []
        for feature_index in features_per_example[example_index]:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = feats[feature_index]["offsets"]
            feature_null_score = start_logits[0] + end_logits[0]
            if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
                min_null_prediction = {"offsets": (0, 0), "score": feature_null_score,
                                       "start_logit": start_logits[0], "end_logit": end_logits[0]}
            start_indexes = np.argsort(start_logits)[-1: -n_best_size - 1: -1].tolist()
            end_indexes = np.argsort(end_logits)[-1: -n_best_size - 1: -1].tolist()
            for start_index in start_indexes:
                for end_index in end_indexes:
                    if (start_index >= len(offset_mapping) or end_index >= len(offset_mapping)
                            or offset_mapping[start_index] is None or len(offset_mapping[start_index]) < 2
                            or offset_mapping[end_index] is None or len(offset_mapping[end_index]) < 2):
                        continue
                    if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                        continue
                    prelim_predictions.append({
                        "offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                        "score": start_logits[start_index] + end_logits[end_index],
                        "start_logit": start_logits[start_index], "end_logit": end_logits[end_index]})
        if version_2_with_negative and min_null_prediction is not None:
            prelim_predictions.append(min_null_prediction)
            null_score = min_null_prediction["score"]
        predictions = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:n_best_size]
        if (version_2_with_negative and min_null_prediction is not None
                and not any(p["offsets"] == (0, 0) for p in predictions)):
            predictions.append(min_null_prediction)
        context = ex["context"]
        for pred in predictions:
            offsets = pred["offsets"]
            pred["text"] = context[offsets[0]: offsets[1]]
        if len(predictions) == 0 or (len(predictions) == 1 and predictions[0]["text"] == ""):
            predictions.insert(0, {"offsets": (0, 0), "text": "empty", "start_logit": 0.0, "end_logit": 0.0,
                                   "score": 0.0})
        scores = np.array([pred["score"] for pred in predictions])
        exp_scores = np.exp(scores - np.max(scores))
        probs = exp_scores / exp_scores.sum()
        best = {"id": ex["id"]}
        if not version_2_with_negative:
            chosen, prob = predictions[0], probs[0]
            best["text"] = chosen["text"]
        else:
            i = 0
            while predictions[i]["text"] == "":
                i += 1
            chosen, prob = predictions[i], probs[i]
            score_diff = null_score - chosen["start_logit"] - chosen["end_logit"]
            best["score_diff"] = float(score_diff)
            best["text"] = "" if score_diff > null_score_diff_threshold else chosen["text"]
        best["chosen_text"] = chosen["text"]
        best["start"], best["end"] = int(chosen["offsets"][0]), int(chosen["offsets"][1])
        best["probability"] = float(prob)
        best["score"] = float(chosen["score"])
        out.append(best)
    return out


def write_json(path, value):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False)
    os.replace(path + ".tmp", path)


def tiny_distilbert(bert_dir, out_dir):
    config = transformers.DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                           max_position_embeddings=128, pad_token_id=0, num_labels=2)
    torch.manual_seed(0)
    transformers.DistilBertForQuestionAnswering(config).save_pretrained(out_dir, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(os.path.join(bert_dir, name), os.path.join(out_dir, name))


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: question_answering_goldens.py BERT_TOKENIZER_DIR NODE_MODULES OUT_DIR")
    bert_dir, modules, root = sys.argv[1:]
    out = os.path.join(root, "question_answering")
    os.makedirs(out, exist_ok=True)
    bert = transformers.BertTokenizer.from_pretrained(bert_dir)  # the fixture's config names no tokens
    examples = synthetic_examples() + email_examples(modules)
    examples.append(cut_example(bert, 48))
    with open(os.path.join(out, "examples.jsonl"), "w", encoding="utf-8") as f:
        for ex in examples:
            f.write(json.dumps(ex, ensure_ascii=False) + "\n")
    roberta = roberta_tokenizer([e["context"] + " " + e["question"] for e in examples],
                                os.path.join(out, "roberta_tokenizer"))
    cases = {"bert_48": (bert, "bert", 48, 16, True), "bert_64_unpadded": (bert, "bert", 64, 24, False),
             "roberta_48": (roberta, "roberta", 48, 16, True), "bert_384": (bert, "bert", 384, 128, True)}
    all_features = {}
    for name, (tok, tok_name, max_length, stride, pad) in cases.items():
        all_features[name] = features(tok, examples, max_length, stride, pad)
        write_json(os.path.join(out, "features_%s.json" % name),
                   {"tokenizer": tok_name, "max_length": max_length, "doc_stride": stride, "pad": pad,
                    "features": all_features[name]})

    feats = all_features["bert_48"]
    rng = np.random.default_rng(17)
    start_logits = rng.normal(size=(len(feats), 48)).astype(np.float32)
    end_logits = rng.normal(size=(len(feats), 48)).astype(np.float32)
    runs = []
    for v2, n_best, max_answer, threshold in ((False, 20, 30, 0.0), (False, 3, 4, 0.0), (True, 20, 30, 0.0),
                                              (True, 5, 10, 1.5), (True, 20, 30, -2.0)):
        runs.append({"version_2_with_negative": v2, "n_best_size": n_best, "max_answer_length": max_answer,
                     "null_score_diff_threshold": threshold,
                     "predictions": postprocess(examples, feats, start_logits.astype(np.float64),
                                                end_logits.astype(np.float64), v2, n_best, max_answer, threshold)})
    write_json(os.path.join(out, "postprocess.json"),
               {"case": "bert_48", "start_logits": start_logits.tolist(), "end_logits": end_logits.tolist(),
                "runs": runs})
    tiny_distilbert(bert_dir, os.path.join(out, "distilbert_tiny"))
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write("done\n")


if __name__ == "__main__":
    main()
