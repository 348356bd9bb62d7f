"""examples/python's scripts, as README shows them, on the tiny BERT classifier: the seed's script trains and
evaluates through berth's Trainer; explain_placement names the meta layer and the fix."""

import os
import subprocess
import sys

from conftest import tiny_bert_dir

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def run_example(name, tmp_path):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), tiny_bert_dir()], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_seed_script_trains_and_evaluates(tmp_path):
    out = run_example("seed_trainer.py", tmp_path)
    last = out.strip().splitlines()[-1]
    assert last.startswith("{") and "'eval_loss'" in last and "'eval_accuracy'" in last, out
    assert os.path.isfile(tmp_path / "results" / "model.safetensors"), os.listdir(tmp_path / "results")


def test_explain_placement_names_the_meta_layer_and_the_fix(tmp_path):
    out = run_example("explain_placement.py", tmp_path)
    assert "meta:" in out and "bert.encoder.layer." in out, out
    assert "Fix: meta tensors have a shape but no data" in out, out
