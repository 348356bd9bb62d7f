# purpose: what bench/train_step.py and bench/eval_step.py share: the preset sizes, the transformers model
# built from a BertConfig of those sizes, the synthetic batch `berth benchmark` draws, the FLOP count of
# cli/benchmark_command.cpp and the JSON line.

import json
import statistics

import torch
from transformers import BertConfig, BertForSequenceClassification

# Same sizes as include/berth/model/bert_presets.h: layers, hidden, heads, intermediate.
PRESETS = {
    "bert-tiny": (2, 128, 2, 512),
    "bert-mini": (4, 256, 4, 1024),
    "bert-small": (4, 512, 8, 2048),
    "bert-base": (12, 768, 12, 3072),
}


def add_common_args(ap):
    ap.add_argument("--model-preset", default="bert-mini", choices=sorted(PRESETS))
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=30522)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                    help="transformers' attention implementation (its default: sdpa)")
    ap.add_argument("--bf16", action="store_true", help="torch.autocast('cpu', dtype=torch.bfloat16), as "
                    "HF Trainer's bf16=True on the CPU")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]: where the model and the batch are")
    ap.add_argument("--compile", action="store_true", help="torch.compile(model) (inductor), as HF Trainer's "
                    "torch_compile=True; the warm-up steps pay the compilation")


def build(a):
    """The preset's BertForSequenceClassification (HF's init, seeded) and `berth benchmark`'s batch."""
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    layers, hidden, heads, intermediate = PRESETS[a.model_preset]
    # Everything else is BertConfig's default, as in bert_preset(): gelu, dropout 0.1, 512 positions,
    # 2 token types, layer_norm_eps 1e-12, 2 labels.
    config = BertConfig(vocab_size=a.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        attn_implementation=a.attn)
    torch.manual_seed(a.seed)
    model = BertForSequenceClassification(config)  # post_init(): HF's _init_weights
    assert model.config._attn_implementation == a.attn, model.config._attn_implementation
    model.to(a.device)
    if a.compile:
        model = torch.compile(model)
    # berth benchmark seeds again (seed + rank) before drawing the tokens: the same mt19937, the same ids.
    torch.manual_seed(a.seed)
    ids = torch.randint(config.vocab_size, (a.batch_size, a.seq_len), dtype=torch.long)
    mask = torch.ones(a.batch_size, a.seq_len, dtype=torch.long)
    labels = torch.randint(config.num_labels, (a.batch_size,), dtype=torch.long)
    return model, ids.to(a.device), mask.to(a.device), labels.to(a.device)


def wait(a):
    """CUDA runs asynchronously: a step ends when the device has finished it."""
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()


def autocast(a):
    """HF Trainer's bf16=True: torch.autocast on the run's device type, bfloat16."""
    return torch.autocast(a.device.split(":")[0], dtype=torch.bfloat16, enabled=a.bf16)


def step_flops(config, batch, seq):
    # The formula of cli/benchmark_command.cpp: 6 FLOPs per matmul weight per token, attention 12·L·B·T²·C
    # (a training step; a forward alone is a third of it).
    C, I, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    encoder = 6.0 * L * (4 * C * C + 2 * C * I) * batch * seq
    attention = 12.0 * L * batch * seq * seq * C
    head = 6.0 * batch * (C * C + C * config.num_labels)
    return encoder + attention + head


def print_result(a, model, step, flops, extra):
    step_ms = statistics.median(step)
    out = {
        "implementation": "python",
        "preset": a.model_preset,
        "batch_size": a.batch_size,
        "seq_len": a.seq_len,
        "threads": torch.get_num_threads(),
        "steps": a.steps,
        "samples_per_second": a.batch_size * 1000.0 / step_ms,
        "step_ms": step_ms,
        "min_step_ms": min(step),
    }
    out.update(extra)
    out.update({
        "model_tflop_per_step": flops * 1e-12,
        "achieved_gflops": flops / (step_ms * 1e-3) * 1e-9,
        "attn": model.config._attn_implementation,
        "bf16": bool(a.bf16),
        "compile": bool(getattr(a, "compile", False)),
        "device": a.device,
        "torch": torch.__version__,
    })
    print(json.dumps(out), flush=True)
