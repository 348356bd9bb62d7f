#!/usr/bin/env python3
# Goldens for the train-io area: HF Trainer's checkpoint rotation and torch's CPU generator state, computed by
# the libraries themselves (transformers==5.24.0, torch==2.15.0, pinned in scripts/requirements.txt).
#
# rotate_checkpoints.json: transformers.trainer_utils.rotate_checkpoints (over sort_checkpoints; Trainer's
# _rotate_checkpoints / _sorted_checkpoints methods of 4.x became these module functions in 5.x), called as
# Trainer._save_checkpoint calls it, on real checkpoint-<step> directories in a temp dir, over a grid of
# cases: steps present, save_total_limit, best checkpoint. Each case records which checkpoints HF deletes,
# in the order it deletes them.
#
# rng_state.json: torch.manual_seed(seed) -> torch.get_rng_state() bytes, then draws after restoring a state
# taken mid-stream, so berth's capture/restore is checked against PyTorch's own generator.
#
# Usage (run with scripts/python): train_io_goldens.py OUT_DIR
import json
import os
import shutil
import sys
import tempfile

import torch
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints


BASE_NS = 1_700_000_000 * 10**9  # the mtimes below are this plus an offset; the C++ test sets the same ones


def rotate_in_dir(steps, mtimes_ns, save_total_limit, best, use_mtime=True):
    """HF's rotation on real directories: creates checkpoint-<step> for each step in a fresh temp dir, with the
    given mtimes (ns since the epoch), calls transformers' rotate_checkpoints as Trainer._save_checkpoint does
    (use_mtime=True), and returns the names of the directories it deleted, in the order it deleted them
    (shutil.rmtree is watched, not replaced)."""
    with tempfile.TemporaryDirectory() as run_dir:
        for step, mtime_ns in zip(steps, mtimes_ns):
            path = os.path.join(run_dir, f"{PREFIX_CHECKPOINT_DIR}-{step}")
            os.makedirs(path)
            os.utime(path, ns=(mtime_ns, mtime_ns))
        before = set(os.listdir(run_dir))
        deleted = []
        real_rmtree = shutil.rmtree

        def watched_rmtree(path, *args, **kwargs):
            deleted.append(os.path.relpath(path, run_dir))
            return real_rmtree(path, *args, **kwargs)

        shutil.rmtree = watched_rmtree
        try:
            rotate_checkpoints(output_dir=run_dir, save_total_limit=save_total_limit,
                               best_model_checkpoint=None if best is None else os.path.join(run_dir, best),
                               use_mtime=use_mtime)
        finally:
            shutil.rmtree = real_rmtree
        gone = before - set(os.listdir(run_dir))
        assert gone == set(deleted), (gone, deleted)
        return deleted


def in_step_order(steps):
    """mtimes a minute apart in step order: checkpoints saved one after another."""
    order = sorted(steps)
    return [BASE_NS + 60 * 10**9 * order.index(s) for s in steps]


def rotation_cases():
    cases = []

    def add(steps, mtimes_ns, limits, extra_bests=()):
        names = [f"{PREFIX_CHECKPOINT_DIR}-{s}" for s in steps]
        for limit in limits:
            for best in [None] + names + [f"{PREFIX_CHECKPOINT_DIR}-{b}" for b in extra_bests]:
                deleted = rotate_in_dir(steps, mtimes_ns, limit, best)
                cases.append({"steps": steps, "mtimes_ns": mtimes_ns, "save_total_limit": limit, "best": best,
                              "deleted": deleted})
        return names

    # Saved in step order: mtime order is step order.
    step_sets = [[], [500], [500, 1000], [500, 1000, 1500], [10, 9, 100, 1000, 20, 200], [5, 50, 500, 5000, 6000]]
    for steps in step_sets:
        add(steps, in_step_order(steps), [-1, 0, 1, 2, 3, 5], extra_bests=[77777])
        # and sorting by the step number instead (use_mtime=False) deletes the same
        for c in cases[-6 * (len(steps) + 2):]:
            assert c["deleted"] == rotate_in_dir(steps, c["mtimes_ns"], c["save_total_limit"], c["best"],
                                                 use_mtime=False), c
    # Resumed from checkpoint-500 after checkpoint-1500 was saved: checkpoint-600 is the newest by mtime.
    second = 10**9
    add([500, 1000, 1500, 600], [BASE_NS, BASE_NS + 60 * second, BASE_NS + 120 * second, BASE_NS + 180 * second],
        [1, 2, 3, 5], extra_bests=[77777])
    # mtimes out of step order, more than a second apart: mtime order.
    add([10, 20, 30, 40], [BASE_NS + 2 * second, BASE_NS, BASE_NS + second, BASE_NS + 3 * second], [1, 2, 3])
    # equal mtimes: the path breaks the tie (as a string: checkpoint-10 < checkpoint-9)
    add([9, 10, 100], [BASE_NS, BASE_NS, BASE_NS + 5 * second], [1, 2])
    # all within a second of each other: HF takes the mtimes as unreliable and sorts by step
    add([3, 1, 2], [BASE_NS + second // 4, BASE_NS + second // 2, BASE_NS], [1, 2])
    add([7, 8], [BASE_NS, BASE_NS], [1])
    return cases


def rng_cases():
    cases = []
    for seed in [0, 42, 1234]:
        torch.manual_seed(seed)
        seeded = torch.get_rng_state()
        torch.randn(7)  # move the stream so the mid-stream state differs from the seeded one
        torch.rand(3)
        mid = torch.get_rng_state()
        after_mid = torch.randn(6, dtype=torch.float64)
        cases.append({"seed": seed, "seeded_state": seeded.tolist(), "mid_state": mid.tolist(),
                      "randn_after_mid": after_mid.tolist()})
    return cases


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "rotate_checkpoints.json"), "w") as f:
        json.dump(rotation_cases(), f)
    with open(os.path.join(out, "rng_state.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "cases": rng_cases()}, f)


if __name__ == "__main__":
    main()
