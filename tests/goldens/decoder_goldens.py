#!/usr/bin/env python3
# purpose: decoder model goldens from HF transformers itself (transformers==5.24.0, pinned in scripts/requirements.txt):
# GPT2LMHeadModel / GPT2ForSequenceClassification and the Llama-style *ForCausalLM / *ForSequenceClassification
# (llama, mistral, qwen2) on tiny random configs in eager attention: logits, loss and every parameter's gradient.
#
# Usage: scripts/python tests/goldens/decoder_goldens.py OUT_DIR. Offline: models are built from configs, never
# downloaded. Every file is written by the libraries (save_pretrained, safetensors.torch.save_file); nothing restates
# HF's modeling code.
#
# Per case, OUT_DIR/decoders/<case>/ holds config.json and model.safetensors (save_pretrained, before the forward) and
# golden.safetensors: input_ids, attention_mask, labels, logits, loss and grad.<name> for every parameter as
# named_parameters() lists it (a tied lm_head is listed once, under the embedding); metadata: the architecture and the
# problem_type HF's forward chose ("" for language models). OUT_DIR/decoders/cases.txt lists the cases; stamp is last.

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

transformers.utils.logging.disable_progress_bar()

VOCAB = 64
PAD = 0


def gpt2_config(**overrides):
    c = dict(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4, activation_function="gelu_new")
    c.update(overrides)
    return transformers.GPT2Config(attn_implementation="eager", **c)


def llama_style_config(config_class, **overrides):
    c = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6)
    c.update(overrides)
    return config_class(attn_implementation="eager", **c)


LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
LINEAR_ROPE = {"rope_type": "linear", "rope_theta": 500.0, "factor": 2.0}
# The 8-token inputs run past max_position_embeddings 6, so HF's dynamic NTK update rescales the base.
DYNAMIC_ROPE = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}

# name, HF model class, config, label kind (None: causal LM labels)
CASES = [
    ("gpt2_causal_lm", transformers.GPT2LMHeadModel, lambda: gpt2_config(), None),
    ("gpt2_causal_lm_untied_options", transformers.GPT2LMHeadModel,
     lambda: gpt2_config(tie_word_embeddings=False, scale_attn_by_inverse_layer_idx=True,
                         reorder_and_upcast_attn=True, activation_function="relu", n_inner=40), None),
    ("gpt2_sequence_classification", transformers.GPT2ForSequenceClassification,
     lambda: gpt2_config(pad_token_id=PAD, num_labels=3), "long"),
    ("gpt2_sequence_classification_multi_label", transformers.GPT2ForSequenceClassification,
     lambda: gpt2_config(pad_token_id=PAD, num_labels=4), "multi_hot"),
    ("llama_causal_lm", transformers.LlamaForCausalLM,
     lambda: llama_style_config(transformers.LlamaConfig), None),
    ("llama_causal_lm_tied_biases", transformers.LlamaForCausalLM,
     lambda: llama_style_config(transformers.LlamaConfig, tie_word_embeddings=True, attention_bias=True,
                                mlp_bias=True, pad_token_id=PAD, hidden_act="gelu_new"), None),
    ("llama_rope_llama3", transformers.LlamaForCausalLM,
     lambda: llama_style_config(transformers.LlamaConfig, rope_parameters=dict(LLAMA3_ROPE)), None),
    ("llama_rope_linear", transformers.LlamaForCausalLM,
     lambda: llama_style_config(transformers.LlamaConfig, rope_parameters=dict(LINEAR_ROPE), head_dim=16), None),
    ("llama_rope_dynamic", transformers.LlamaForCausalLM,
     lambda: llama_style_config(transformers.LlamaConfig, rope_parameters=dict(DYNAMIC_ROPE),
                                max_position_embeddings=6), None),
    ("llama_sequence_classification", transformers.LlamaForSequenceClassification,
     lambda: llama_style_config(transformers.LlamaConfig, pad_token_id=PAD, num_labels=3), "long"),
    ("mistral_causal_lm", transformers.MistralForCausalLM,
     lambda: llama_style_config(transformers.MistralConfig, sliding_window=3), None),
    ("mistral_sequence_classification", transformers.MistralForSequenceClassification,
     lambda: llama_style_config(transformers.MistralConfig, sliding_window=3, pad_token_id=PAD, num_labels=1),
     "float"),
    ("qwen2_causal_lm", transformers.Qwen2ForCausalLM,
     lambda: llama_style_config(transformers.Qwen2Config, tie_word_embeddings=True), None),
    ("qwen2_sequence_classification", transformers.Qwen2ForSequenceClassification,
     lambda: llama_style_config(transformers.Qwen2Config, pad_token_id=PAD, num_labels=3), "long"),
    # Left padding (as batched generation pads): padded rows start with pads, positions still count from 0.
    ("llama_causal_lm_left_padded", transformers.LlamaForCausalLM,
     lambda: llama_style_config(transformers.LlamaConfig, pad_token_id=PAD), None),
    ("gpt2_sequence_classification_left_padded", transformers.GPT2ForSequenceClassification,
     lambda: gpt2_config(pad_token_id=PAD, num_labels=3), "long"),
]


def randomize(model, generator):
    # Far from HF's init on purpose (std 0.02 makes every layer nearly linear).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "ln_" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn(p.shape, generator=generator))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))


def case_inputs(label_kind, num_labels, generator, batch=3, length=8, left=False):
    input_ids = torch.randint(1, VOCAB, (batch, length), generator=generator)
    mask = torch.ones(batch, length, dtype=torch.long)
    for row in range(1, batch):  # padding of different lengths (right, or left); row 0 stays full
        pads = slice(0, 2 * row) if left else slice(length - 2 * row, length)
        mask[row, pads] = 0
        input_ids[row, pads] = PAD
    if label_kind is None:
        labels = input_ids.clone()
        labels[mask == 0] = -100
    elif label_kind == "long":
        labels = torch.randint(0, num_labels, (batch,), generator=generator)
    elif label_kind == "float":
        labels = torch.randn((batch,), generator=generator)
    else:
        labels = (torch.rand((batch, num_labels), generator=generator) > 0.5).to(torch.float32)
    return input_ids, mask, labels


def run_case(root, name, model_class, make_config, label_kind, seed):
    generator = torch.Generator().manual_seed(seed)
    config = make_config()
    model = model_class(config)
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    randomize(model, generator)
    model.eval()
    out_dir = os.path.join(root, name)
    model.save_pretrained(out_dir, safe_serialization=True)
    input_ids, mask, labels = case_inputs(label_kind, config.num_labels, generator,
                                          left=name.endswith("_left_padded"))
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    out.loss.backward()
    tensors = {"input_ids": input_ids, "attention_mask": mask, "labels": labels,
               "logits": out.logits.detach().contiguous(), "loss": out.loss.detach().reshape(())}
    for pname, p in model.named_parameters():
        tensors["grad." + pname] = p.grad.detach().contiguous()
    metadata = {"architecture": type(model).__name__,
                "problem_type": "" if label_kind is None else str(model.config.problem_type)}
    save_file(tensors, os.path.join(out_dir, "golden.safetensors"), metadata=metadata)


def main():
    root = os.path.join(sys.argv[1], "decoders")
    os.makedirs(root, exist_ok=True)
    torch.manual_seed(0)
    for i, (name, model_class, make_config, label_kind) in enumerate(CASES):
        run_case(root, name, model_class, make_config, label_kind, seed=1000 + i)
    with open(os.path.join(root, "cases.txt"), "w") as f:
        f.write("".join(name + "\n" for name, *_ in CASES))
    with open(os.path.join(root, "stamp"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
