#!/usr/bin/env python3
# purpose: encoder-family goldens from HF transformers itself (transformers==5.24.0, pinned in
# scripts/requirements.txt): RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, ModernBERT and DeBERTa-v2/v3 with each
# task head berth implements, and BERT with its token-classification and question-answering heads, on tiny random configs in
# eager attention (logits, loss, every parameter's gradient).
#
# Usage: scripts/python tests/goldens/encoder_goldens.py OUT_DIR. Offline: models are built from configs, never
# downloaded. Every file is written by the libraries (save_pretrained with safe_serialization,
# safetensors.torch.save_file); nothing restates HF's modeling code.
#
# Per case, OUT_DIR/encoders/<family>_<task>/ holds
#   config.json, model.safetensors  transformers' save_pretrained of the model (tied weights left out, as HF does)
#   golden.safetensors              input_ids, attention_mask (rows padded at the end), token_type_ids (zeros, as
#                                   berth's collator adds them; DistilBERT and ModernBERT take none), labels or
#                                   start_positions/end_positions, logits ((B, T, 2) start/end for question
#                                   answering), loss, and grad.<name> for every
#                                   tensor model.safetensors holds (a tied parameter once, under the name
#                                   save_pretrained keeps)
# The modernbert_mean case (sequence classification only) pools by the mean with every optional bias on.
# cases.txt lists the cases; stamp is written last.

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

transformers.utils.logging.disable_progress_bar()

VOCAB = 60
BATCH = 3
LENGTH = 9
TASKS = ("sequence-classification", "token-classification", "masked-lm", "question-answering")
HEADS = {"sequence-classification": "ForSequenceClassification", "token-classification": "ForTokenClassification",
         "masked-lm": "ForMaskedLM", "question-answering": "ForQuestionAnswering"}
NUM_LABELS = {"sequence-classification": 3, "token-classification": 5, "masked-lm": 2, "question-answering": 2}


def bert_like(**overrides):
    c = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
             max_position_embeddings=20, type_vocab_size=1, layer_norm_eps=1e-5)
    c.update(overrides)
    return c


def modernbert_like(**overrides):
    c = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
             global_attn_every_n_layers=3, local_attention=4, max_position_embeddings=20, pad_token_id=0,
             bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2, embedding_dropout=0.1,
             attention_dropout=0.1, mlp_dropout=0.1, classifier_dropout=0.1)
    c.update(overrides)
    return c


def deberta_like(**overrides):
    c = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
             max_position_embeddings=20, type_vocab_size=0, layer_norm_eps=1e-7, relative_attention=True,
             position_buckets=8, norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
             position_biased_input=False, max_relative_positions=-1, pad_token_id=0, pooler_hidden_size=32,
             pooler_dropout=0.1, pooler_hidden_act="gelu", legacy=True)
    c.update(overrides)
    return c


# family -> (config class, class-name prefix, config arguments, pad id)
FAMILIES = {
    "roberta": (transformers.RobertaConfig, "Roberta", bert_like(pad_token_id=1, bos_token_id=0, eos_token_id=2), 1),
    "xlm-roberta": (transformers.XLMRobertaConfig, "XLMRoberta",
                    bert_like(pad_token_id=1, bos_token_id=0, eos_token_id=2, hidden_act="gelu_new"), 1),
    "distilbert": (transformers.DistilBertConfig, "DistilBert",
                   dict(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=37, activation="gelu",
                        dropout=0.1, attention_dropout=0.1, max_position_embeddings=20, pad_token_id=0,
                        sinusoidal_pos_embds=False), 0),
    "electra": (transformers.ElectraConfig, "Electra",
                bert_like(embedding_size=24, type_vocab_size=2, pad_token_id=0, layer_norm_eps=1e-12), 0),
    # Layers 0 and 3 global, 1 and 2 local with a window of 4 (|i - j| <= 2): it cuts at LENGTH 9, and a padded
    # row's last queries see only padding there. Dropouts on, so training differs from evaluation.
    "modernbert": (transformers.ModernBertConfig, "ModernBert", modernbert_like(), 0),
    # Mean pooling, every optional bias on, other activations and rope thetas.
    "modernbert-mean": (transformers.ModernBertConfig, "ModernBert",
                        modernbert_like(classifier_pooling="mean", attention_bias=True, mlp_bias=True,
                                        norm_bias=True, classifier_bias=True, decoder_bias=True,
                                        hidden_activation="gelu_new", classifier_activation="relu",
                                        global_rope_theta=500.0, local_rope_theta=77.0), 0),
    "bert": (transformers.BertConfig, "Bert", bert_like(type_vocab_size=2, pad_token_id=0, layer_norm_eps=1e-12), 0),
    # DeBERTa-v3's shape: shared position projections, log-bucketed relative positions (8 buckets: distances of 4
    # and more in LENGTH 9 fall into log buckets), normalised relative embeddings, no absolute positions or
    # token types.
    "deberta-v2": (transformers.DebertaV2Config, "DebertaV2", deberta_like(), 0),
    # DeBERTa-v2's: its own position projections, relative distances clamped at 6, absolute positions, token
    # types, an embedding projection (24 -> 32), the convolution after the first layer, another pooler act.
    "deberta-v2-unshared": (transformers.DebertaV2Config, "DebertaV2",
                            deberta_like(share_att_key=False, position_buckets=-1, max_relative_positions=6,
                                         norm_rel_ebd="none", position_biased_input=True, type_vocab_size=2,
                                         embedding_size=24, conv_kernel_size=3, conv_act="gelu",
                                         pos_att_type="c2p|p2c", pooler_hidden_act="tanh"), 0),
    # The newer masked-LM head (lm_predictions.lm_head) that DeBERTa-v3 checkpoints carry.
    "deberta-v2-lm": (transformers.DebertaV2Config, "DebertaV2", deberta_like(legacy=False), 0),
}
# Families written for some tasks only (the others add nothing over the family above them; BERT's
# sequence-classification and masked-LM heads have their own goldens, bert_goldens.py and bert_mlm_goldens.py).
FAMILY_TASKS = {"modernbert-mean": ("sequence-classification",),
                "bert": ("token-classification", "question-answering"),
                "deberta-v2-unshared": ("sequence-classification", "masked-lm"),
                "deberta-v2-lm": ("masked-lm",)}


def randomize(model, generator):
    # Far from HF's init on purpose (std 0.02 makes every layer nearly linear): weights and biases that exercise
    # the activations, norm affine terms that are not 1/0. Tied tensors are one parameter here, drawn once.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=generator))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))


def inputs(pad_id, generator):
    ids = torch.randint(3, VOCAB, (BATCH, LENGTH), generator=generator)
    ids[:, 0] = 0 if pad_id != 0 else 2  # a <s>/[CLS]-like first token
    mask = torch.ones(BATCH, LENGTH, dtype=torch.long)
    for row, kept in ((1, LENGTH - 3), (2, LENGTH - 5)):  # rows padded at the end
        ids[row, kept:] = pad_id
        mask[row, kept:] = 0
    return ids, mask


def task_labels(task, mask, num_labels, generator):
    if task == "sequence-classification":
        return {"labels": torch.randint(0, num_labels, (BATCH,), generator=generator)}
    if task == "token-classification":
        labels = torch.randint(0, num_labels, (BATCH, LENGTH), generator=generator)
        return {"labels": labels.masked_fill(mask == 0, -100)}
    if task == "masked-lm":
        labels = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=generator)
        keep = torch.rand(BATCH, LENGTH, generator=generator) < 0.4
        keep[0, 1] = True
        return {"labels": labels.masked_fill(~keep | (mask == 0), -100)}
    # One end beyond the input: HF clamps it to LENGTH, its ignore index.
    return {"start_positions": torch.tensor([1, 0, 2]), "end_positions": torch.tensor([4, LENGTH + 3, 3])}


def run_case(root, family, task, seed):
    config_class, prefix, arguments, pad_id = FAMILIES[family]
    num_labels = NUM_LABELS[task]
    config = config_class(attn_implementation="eager", num_labels=num_labels, **arguments)
    model = getattr(transformers, prefix + HEADS[task])(config)
    generator = torch.Generator().manual_seed(seed)
    randomize(model, generator)
    model.eval()  # dropout off: the C++ side compares in eval mode
    name = family.replace("-", "_") + "_" + task.replace("-", "_")
    out_dir = os.path.join(root, "encoders", name)
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)  # before the forward, which may set problem_type

    ids, mask = inputs(pad_id, generator)
    labels = task_labels(task, mask, num_labels, generator)
    types = torch.zeros_like(ids)
    kwargs = {} if family.startswith(("distilbert", "modernbert")) else {"token_type_ids": types}
    out = model(input_ids=ids, attention_mask=mask, **kwargs, **labels)
    out.loss.backward()
    logits = torch.stack([out.start_logits, out.end_logits], -1) if task == "question-answering" else out.logits

    golden = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "logits": logits, "loss": out.loss}
    golden.update(labels)
    # Under the names save_pretrained wrote: a tied parameter is one tensor, named as the file names it.
    parameters = dict(model.named_parameters(remove_duplicate=False))
    with safe_open(os.path.join(out_dir, "model.safetensors"), "pt") as saved:
        for pname in saved.keys():
            p = parameters[pname]
            golden["grad." + pname] = p.grad if p.grad is not None else torch.zeros_like(p)
    golden = {k: v.detach().contiguous() for k, v in golden.items()}
    save_file(golden, os.path.join(out_dir, "golden.safetensors"),
              metadata={"case": name, "architecture": type(model).__name__,
                        "transformers_version": transformers.__version__})
    return name


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: encoder_goldens.py OUT_DIR")
    root = sys.argv[1]
    torch.manual_seed(0)  # HF's own init runs before randomize() replaces every weight
    names = []
    for i, family in enumerate(FAMILIES):
        for j, task in enumerate(TASKS):
            if task not in FAMILY_TASKS.get(family, TASKS):
                continue
            names.append(run_case(root, family, task, seed=200 + 10 * i + j))
    write_text(os.path.join(root, "encoders", "cases.txt"), "".join(n + "\n" for n in names))
    write_text(os.path.join(root, "encoders", "stamp"), "done\n")


if __name__ == "__main__":
    main()
