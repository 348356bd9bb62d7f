"""Parameter counts of full-size models as transformers builds them on the meta device (a tied weight once),
for berth's meta-device task models and `berth estimate-memory`.

Usage: parameter_count_goldens.py OUT_DIR. Writes OUT_DIR/parameter_counts/<case>/config.json (as
save_pretrained writes it, architectures set) and expected.json {"task", "num_parameters"}, then cases.txt.
"""
import json
import os
import sys

import torch
import transformers as tf

CASES = [
    # name, config, HF Auto class, berth task
    ("bert_base_sequence_classification", tf.BertConfig(), tf.AutoModelForSequenceClassification,
     "sequence-classification"),
    ("roberta_base_masked_lm",
     tf.RobertaConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1),
     tf.AutoModelForMaskedLM, "masked-lm"),
    ("xlm_roberta_base_question_answering",
     tf.XLMRobertaConfig(vocab_size=250002, max_position_embeddings=514, type_vocab_size=1),
     tf.AutoModelForQuestionAnswering, "question-answering"),
    ("distilbert_base_sequence_classification", tf.DistilBertConfig(num_labels=5),
     tf.AutoModelForSequenceClassification, "sequence-classification"),
    ("electra_small_token_classification", tf.ElectraConfig(num_labels=9),
     tf.AutoModelForTokenClassification, "token-classification"),
    ("gpt2_causal_lm", tf.GPT2Config(), tf.AutoModelForCausalLM, "causal-lm"),
    ("llama3_8b_causal_lm",
     tf.LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                    tie_word_embeddings=False),
     tf.AutoModelForCausalLM, "causal-lm"),
    ("qwen2_05b_causal_lm",
     tf.Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                    num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True),
     tf.AutoModelForCausalLM, "causal-lm"),
    ("mistral_7b_sequence_classification", tf.MistralConfig(num_labels=3, pad_token_id=0),
     tf.AutoModelForSequenceClassification, "sequence-classification"),
]


def main(out_dir):
    root = os.path.join(out_dir, "parameter_counts")
    os.makedirs(root, exist_ok=True)
    names = []
    for name, config, auto, task in CASES:
        with torch.device("meta"):
            model = auto.from_config(config)
        case_dir = os.path.join(root, name)
        model.config.architectures = [type(model).__name__]
        model.config.save_pretrained(case_dir)
        count = sum(p.numel() for p in model.parameters())  # parameters() yields a tied weight once
        with open(os.path.join(case_dir, "expected.json"), "w") as f:
            json.dump({"task": task, "num_parameters": count, "architecture": type(model).__name__}, f)
        names.append(name)
    with open(os.path.join(root, "cases.txt"), "w") as f:
        f.write("\n".join(names) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
