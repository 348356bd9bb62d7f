"""The Python front end's training step vs `berth train`'s, interleaved in one run: ROUNDS rounds of (berth
train, python berth.Trainer) with the same arguments and data, the order swapped every other round, each in its
own process with OMP_WAIT_POLICY=PASSIVE; a step's time is train_runtime / global_step from each run's
train_results.json. Prints each round and the median of the per-round ratio python/berth (1.00: the same).

Usage: PYTHONPATH=build/python scripts/python bench/python_step.py [--berth build/bin/berth] [--rounds 5]
       [--steps 40] [--preset bert-mini] [--batch 8] [--seq 128] [--threads 2] [--callback]
--callback gives the Python run a callback with on_step_begin and on_step_end (two GIL round trips a step).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PYTHON_RUN = """
import sys, json, berth
args = json.loads(sys.argv[1])
options = args.pop("_trainer")
rows = [json.loads(line) for line in open(options.pop("train"))]
class Count(berth.TrainerCallback):  # a Python call at every step's begin and end (--callback)
    steps = 0
    def on_step_begin(self, args, state, control, **kwargs):
        pass
    def on_step_end(self, args, state, control, **kwargs):
        Count.steps += 1
callbacks = [Count()] if options.pop("callback") else []
berth.Trainer(args=berth.TrainingArguments(**args), train_dataset=rows, callbacks=callbacks, **options).train()
"""


def rows(n):
    spam = ["free prize click here now", "win cash offer", "cheap loans click now click now free"]
    ham = ["meeting tomorrow review report", "the build is green",
           "please review the attached report before the meeting tomorrow"]
    return [{"text": " ".join([(spam if i % 2 == 0 else ham)[i // 2 % 3]] * (1 + i % 7)),
             "label": "spam" if i % 2 == 0 else "ham"} for i in range(n)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--berth", default=os.path.join(ROOT, "build", "bin", "berth"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--preset", default="bert-mini")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--callback", action="store_true")
    parser.add_argument("--tokenizer", default=os.path.join(ROOT, "build", "tests", "goldens",
                                                            "tiny_bert_classifier"))
    opts = parser.parse_args()
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    work = tempfile.mkdtemp(prefix="berth-python-step-")
    train = os.path.join(work, "train.jsonl")
    with open(train, "w") as f:
        for row in rows(opts.batch * opts.steps):
            f.write(json.dumps(row) + "\n")
    args = dict(per_device_train_batch_size=opts.batch, max_steps=opts.steps, max_length=opts.seq,
                save_strategy="no", report_to=["none"], disable_tqdm=True, threads=opts.threads, seed=7,
                logging_steps=1000)
    ratios = []
    for r in range(opts.rounds):
        times = {}
        order = ["berth", "python"] if r % 2 == 0 else ["python", "berth"]
        for which in order:
            out = os.path.join(work, f"{which}-{r}")
            if which == "berth":
                flags = []
                for name, value in dict(args, output_dir=out).items():
                    value = ",".join(value) if isinstance(value, list) else value
                    flags += ["--" + name.replace("_", "-"), str(value).lower() if isinstance(value, bool)
                              else str(value)]
                command = [opts.berth, "train", "--model-preset", opts.preset, "--tokenizer", opts.tokenizer,
                           "--train", train] + flags
            else:
                python_args = dict(args, output_dir=out,
                                   _trainer=dict(model=opts.preset, tokenizer=opts.tokenizer, train=train,
                                                 callback=opts.callback))
                command = [sys.executable, "-c", PYTHON_RUN, json.dumps(python_args)]
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "train_results.json")) as f:
                results = json.load(f)
            times[which] = results["train_runtime"] / opts.steps
        ratios.append(times["python"] / times["berth"])
        print(f"round {r}: berth train {times['berth'] * 1000:.1f} ms/step, python {times['python'] * 1000:.1f} "
              f"ms/step, python/berth {ratios[-1]:.3f}", flush=True)
    print(f"{opts.preset} batch {opts.batch} seq {opts.seq}, {opts.steps} steps"
          f"{', a Python callback' if opts.callback else ''}: python/berth step time, median "
          f"of {opts.rounds} rounds: {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max "
          f"{max(ratios):.3f})")


if __name__ == "__main__":
    main()
