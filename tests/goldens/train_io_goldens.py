# Goldens for the train-io area: HF Trainer's checkpoint rotation and torch's CPU generator state.
#
# rotate_checkpoints.json: HF transformers' Trainer._sorted_checkpoints / _rotate_checkpoints (copied below from
# transformers/trainer.py, v4.x, with the directory listing replaced by a list of names) over a grid of cases:
# steps present, save_total_limit, best checkpoint. Each case records which checkpoints HF deletes.
#
# rng_state.json: torch.manual_seed(seed) -> torch.get_rng_state() bytes, then draws after restoring a state
# taken mid-stream, so berth's capture/restore is checked against PyTorch's own generator.
import json
import os
import re
import sys

import torch

PREFIX_CHECKPOINT_DIR = "checkpoint"


def sorted_checkpoints(names, best_model_checkpoint):
    # transformers Trainer._sorted_checkpoints, use_mtime=False; `names` stands for Path(output_dir).glob(...)
    ordering_and_checkpoint_path = []
    glob_checkpoints = [n for n in names if n.startswith(f"{PREFIX_CHECKPOINT_DIR}-")]
    for path in glob_checkpoints:
        regex_match = re.match(f".*{PREFIX_CHECKPOINT_DIR}-([0-9]+)", path)
        if regex_match is not None and regex_match.groups() is not None:
            ordering_and_checkpoint_path.append((int(regex_match.groups()[0]), path))
    checkpoints_sorted = sorted(ordering_and_checkpoint_path)
    checkpoints_sorted = [checkpoint[1] for checkpoint in checkpoints_sorted]
    # Make sure we don't delete the best model.
    if best_model_checkpoint is not None and best_model_checkpoint in checkpoints_sorted:
        best_model_index = checkpoints_sorted.index(best_model_checkpoint)
        for i in range(best_model_index, len(checkpoints_sorted) - 2):
            checkpoints_sorted[i], checkpoints_sorted[i + 1] = checkpoints_sorted[i + 1], checkpoints_sorted[i]
    return checkpoints_sorted


def rotate_checkpoints(names, save_total_limit, best_model_checkpoint):
    # transformers Trainer._rotate_checkpoints; returns what it would shutil.rmtree
    if save_total_limit is None or save_total_limit <= 0:
        return []
    checkpoints_sorted = sorted_checkpoints(names, best_model_checkpoint)
    if len(checkpoints_sorted) <= save_total_limit:
        return []
    if best_model_checkpoint is not None and save_total_limit == 1 and checkpoints_sorted[-1] != best_model_checkpoint:
        save_total_limit = 2
    number_of_checkpoints_to_delete = max(0, len(checkpoints_sorted) - save_total_limit)
    return checkpoints_sorted[:number_of_checkpoints_to_delete]


def rotation_cases():
    cases = []
    step_sets = [[], [500], [500, 1000], [500, 1000, 1500], [10, 9, 100, 1000, 20, 200], [5, 50, 500, 5000, 6000]]
    for steps in step_sets:
        names = [f"{PREFIX_CHECKPOINT_DIR}-{s}" for s in steps]
        for limit in [-1, 0, 1, 2, 3, 5]:
            for best in [None] + names + [f"{PREFIX_CHECKPOINT_DIR}-77777"]:
                cases.append({"steps": steps, "save_total_limit": limit,
                              "best": best, "deleted": rotate_checkpoints(names, limit, best)})
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
