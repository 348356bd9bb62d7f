#!/usr/bin/env python3
# purpose: ONNX Runtime as the inference peer of `berth benchmark --inference`: transformers'
# BertForSequenceClassification of the preset (built as bench/eval_step.py builds it), exported with
# torch.onnx (fixed batch shape), then fused by ORT's own BERT optimizer (onnxruntime.transformers: Attention,
# SkipLayerNormalization, BiasGelu, as ORT's BERT recipe does), run on ORT's CPU provider with the benchmark's
# thread count; prints one JSON line with the same fields as `berth benchmark --inference`.
#
# ORT comes from bench/peer-requirements.txt (bench/setup-peers installs it beside the test venv, not in it);
# run it with PYTHONPATH set to that folder (bench/peers.sh does).
# Usage: PYTHONPATH=$(bench/setup-peers) scripts/python bench/ort_step.py --model-preset bert-mini
#        --batch-size 32 --seq-len 256 --steps 10 [--threads T] [--no-fuse]

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_bench_common import add_common_args, build, print_result, step_flops  # noqa: E402


def export(model, ids, mask, folder, fuse):
    """The model as ONNX in `folder`, fused by ORT's BERT optimizer unless fuse is false; returns its path and
    the fused operators' counts."""
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False)
    if not fuse:
        return path, {}
    from onnxruntime.transformers.optimizer import optimize_model

    config = model.config
    fused = optimize_model(path, model_type="bert", num_heads=config.num_attention_heads,
                           hidden_size=config.hidden_size, opt_level=0)  # 1 breaks the session on ORT 1.31.1
    fused_path = os.path.join(folder, "model.fused.onnx")
    fused.save_model_to_file(fused_path)
    counts = {op: n for op, n in fused.get_fused_operator_statistics().items() if n}
    return fused_path, counts


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap)
    ap.add_argument("--no-fuse", action="store_true", help="run the exported graph without ORT's BERT fusions")
    # ORT's BERT optimizer recognises the eager attention graph (transformers' SDPA exports as a pattern it
    # leaves unfused: measured, 0 Attention nodes vs 1 per layer), and its fused Attention is what an ORT user
    # runs. --attn sdpa keeps the SDPA export.
    ap.set_defaults(attn="eager")
    a = ap.parse_args()
    import onnxruntime as ort

    model, ids, mask, _ = build(a)
    model.eval()
    with tempfile.TemporaryDirectory() as folder:
        path, fused_ops = export(model, ids, mask, folder, not a.no_fuse)
        options = ort.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    step = []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        logits = session.run(["logits"], feeds)[0]
        t1 = time.perf_counter()
        if s >= a.warmup:
            step.append((t1 - t0) * 1e3)
    with torch.inference_mode():
        reference = model(input_ids=ids, attention_mask=mask).logits.numpy()
    print_result(a, model, step, step_flops(model.config, a.batch_size, a.seq_len) / 3.0, {
        "implementation": "onnxruntime",
        "mode": "inference",
        "forward_ms": statistics.median(step),
        "fused_ops": fused_ops,
        "onnxruntime": ort.__version__,
        "max_abs_diff_vs_torch": float(np.abs(logits - reference).max()),
    })


if __name__ == "__main__":
    main()
