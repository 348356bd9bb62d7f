#!/usr/bin/env python3
# purpose: BertForMaskedLM goldens from HF transformers itself: a tiny random BertForMaskedLM (eager attention,
# eval mode) saved with save_pretrained, and its logits, loss and every parameter's gradient on a padded batch
# whose labels are -100 except at a few masked positions.
#
# Usage: scripts/python tests/goldens/bert_mlm_goldens.py OUT_DIR
# Writes OUT_DIR/config.json and model.safetensors (save_pretrained: the tied decoder is not saved) and
# OUT_DIR/golden.safetensors: input_ids, attention_mask, token_type_ids, labels, logits, loss, grad.<name>.

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import BertConfig, BertForMaskedLM  # noqa: E402

transformers.utils.logging.disable_progress_bar()


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=16, hidden_act="gelu",
                        attn_implementation="eager")
    model = BertForMaskedLM(config)
    # Non-zero head bias and LayerNorm so that a mix-up of either shows in the logits.
    with torch.no_grad():
        model.cls.predictions.bias.normal_(0, 0.5)
        model.cls.predictions.transform.LayerNorm.weight.normal_(1, 0.2)
    model.save_pretrained(out)
    model.eval()
    generator = torch.Generator().manual_seed(3)
    input_ids = torch.randint(5, 60, (3, 10), generator=generator)
    attention_mask = torch.ones(3, 10, dtype=torch.long)
    attention_mask[1, 7:] = 0
    attention_mask[2, 4:] = 0
    input_ids[attention_mask == 0] = 0
    token_type_ids = torch.zeros(3, 10, dtype=torch.long)
    token_type_ids[0, 5:] = 1
    labels = torch.full((3, 10), -100, dtype=torch.long)
    for row, col in [(0, 1), (0, 6), (1, 2), (1, 5), (2, 3)]:
        labels[row, col] = input_ids[row, col]
        input_ids[row, col] = 4  # the "mask" id of this vocabulary
    output = model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                   labels=labels)
    output.loss.backward()
    tensors = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids,
               "labels": labels, "logits": output.logits.detach().contiguous(), "loss": output.loss.detach()}
    for name, param in model.named_parameters():
        tensors["grad." + name] = param.grad.contiguous()
    save_file(tensors, os.path.join(out, "golden.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    main()
