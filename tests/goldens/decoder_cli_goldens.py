#!/usr/bin/env python3
# purpose: end-to-end decoder goldens from HF itself: a byte-level BPE tokenizer trained by HF tokenizers on
# SpamAssassin emails, tiny random GPT-2 and Llama checkpoints over it (causal LM and sequence classification,
# eager attention), HF Trainer.evaluate()'s eval_loss for the causal LMs on a JSONL of emails (batches of 4 with
# padding, DataCollatorForLanguageModeling(mlm=False); see hf_eval_losses), and the classifiers' logits on the
# same texts.
#
# Usage: scripts/python tests/goldens/decoder_cli_goldens.py NPM_MODULES OUT_DIR
# Writes OUT_DIR/eval.jsonl ({"text": ...} per email, cut to 300 characters, every third to 40) and, per model,
# OUT_DIR/<family>_<task>/ (config.json, model.safetensors, tokenizer.json, tokenizer_config.json) with
# expected.json: {"model_loss", "trainer_eval_loss", "batch_size", "max_length"} for causal LMs, {"logits": [[...]]} for classifiers.

import json
import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from unigram_pipelines import spam_emails  # noqa: E402

transformers.utils.logging.disable_progress_bar()

MAX_LENGTH = 32
BATCH_SIZE = 4


def train_tokenizer(texts):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>",
                                                eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                                model_max_length=MAX_LENGTH)


def configs(tokenizer):
    vocab = len(tokenizer)
    common = {"pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id,
              "bos_token_id": tokenizer.bos_token_id}
    gpt2 = dict(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=64, **common)
    llama = dict(vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, **common)
    return [("gpt2", transformers.GPT2Config, gpt2, transformers.GPT2LMHeadModel,
             transformers.GPT2ForSequenceClassification),
            ("llama", transformers.LlamaConfig, llama, transformers.LlamaForCausalLM,
             transformers.LlamaForSequenceClassification)]


def hf_eval_losses(model, tokenizer, texts):
    # HF's evaluation loop in batches of BATCH_SIZE with DataCollatorForLanguageModeling(mlm=False): the model's
    # own loss per batch, counted once per row ("model_loss"), and what Trainer.evaluate() reports
    # ("trainer_eval_loss"). The two differ for GPT-2: transformers 5.24's Trainer divides its summed loss by
    # num_items_in_batch counted over unshifted labels when it does not recognise the model's loss as causal
    # (GPT-2's config has no loss_type), one extra token per row.
    features = [tokenizer(text, truncation=True, max_length=MAX_LENGTH) for text in texts]
    collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False)
    total = 0.0
    for start in range(0, len(features), BATCH_SIZE):
        rows = features[start:start + BATCH_SIZE]
        with torch.no_grad():
            total += model(**collator(rows)).loss.item() * len(rows)
    with tempfile.TemporaryDirectory() as tmp:
        args = transformers.TrainingArguments(output_dir=tmp, per_device_eval_batch_size=BATCH_SIZE,
                                              report_to=[], use_cpu=True, disable_tqdm=True)
        trainer = transformers.Trainer(model=model, args=args, eval_dataset=features, data_collator=collator)
        return {"model_loss": total / len(features), "trainer_eval_loss": trainer.evaluate()["eval_loss"]}


def write_model(out, name, model, tokenizer, expected):
    path = os.path.join(out, name)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(expected, f)


def main():
    modules, out = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    emails = [text for _, text in spam_emails(modules, 50, 5)]
    tokenizer = train_tokenizer(emails)
    # Every third one cut to 40 characters, so that batches carry padding.
    texts = [text[:40] if i % 3 == 0 else text[:300] for i, text in enumerate(emails[:10])]
    with open(os.path.join(out, "eval.jsonl"), "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps({"text": text}) + "\n")
    for family, config_class, config, lm_class, classifier_class in configs(tokenizer):
        torch.manual_seed(1)
        lm = lm_class(config_class(**config, attn_implementation="eager")).eval()
        write_model(out, family + "_causal_lm", lm, tokenizer,
                    {**hf_eval_losses(lm, tokenizer, texts), "batch_size": BATCH_SIZE, "max_length": MAX_LENGTH})
        classifier = classifier_class(config_class(**config, num_labels=2, attn_implementation="eager")).eval()
        batch = tokenizer(texts, truncation=True, max_length=MAX_LENGTH, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = classifier(**batch).logits
        write_model(out, family + "_sequence_classification", classifier, tokenizer, {"logits": logits.tolist()})


if __name__ == "__main__":
    main()
