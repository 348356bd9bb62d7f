"""berth.Trainer in its own processes: `berth launch --nproc-per-node 2 -- python script.py` trains what one
process with twice the batch trains; Ctrl-C stops a run at the next step with a checkpoint."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from conftest import BERTH_CLI, run_cli, tiny_bert_dir

safetensors_torch = pytest.importorskip("safetensors.torch")
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "train_script.py")


def script_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_two_ranks_under_berth_launch_train_as_one_rank_with_twice_the_batch(tmp_path):
    tiny_bert_dir()
    one = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "one"), "8", "3", "no"], env=script_env(),
                         capture_output=True, text=True, timeout=300)
    assert one.returncode == 0, one.stdout + one.stderr
    two = run_cli(["launch", "--nproc-per-node", "2", "--", sys.executable, SCRIPT, str(tmp_path / "two"), "4",
                   "3", "no"], env=script_env())
    assert "distributed: 2 ranks" in two.stdout + two.stderr
    a = safetensors_torch.load_file(str(tmp_path / "one" / "model.safetensors"))
    b = safetensors_torch.load_file(str(tmp_path / "two" / "model.safetensors"))
    assert sorted(a) == sorted(b)
    worst = max((a[name] - b[name]).abs().max().item() for name in a)
    assert worst <= 1e-5  # the C++ DdpTraining tests' tolerance: a sum over two ranks rounds differently


def test_ctrl_c_stops_at_the_next_step_with_a_checkpoint(tmp_path):
    tiny_bert_dir()
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, SCRIPT, str(out), "4", "100000", "steps"], env=script_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:  # berth's console lines, then the script's
            if line.strip() == "ready":
                break
        time.sleep(2.0)  # into the C++ loop
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0 and "KeyboardInterrupt" in stderr, stdout + stderr
    assert "interrupted; stopping after this step with a checkpoint" in stderr
    checkpoints = [d for d in os.listdir(out) if d.startswith("checkpoint-")]
    assert len(checkpoints) == 1, os.listdir(out)
    step = int(checkpoints[0].split("-")[1])
    assert 0 < step < 100000
    with open(out / checkpoints[0] / "trainer_state.json") as f:
        assert json.load(f)["global_step"] == step
    assert "training stopped at step " + str(step) in stderr
