"""A training script the process tests run as `python train_script.py OUT BATCH MAX_STEPS SAVE` (under `berth
launch` too): bert-tiny on the spam/ham rows with the parity test's arguments."""

import sys

import berth
from conftest import PRESET_OVERRIDES, spam_ham_rows, tiny_bert_dir

out, batch, max_steps, save_strategy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
args = berth.TrainingArguments(output_dir=out, per_device_train_batch_size=batch, gradient_accumulation_steps=2,
                               max_grad_norm=0.05, learning_rate=1e-3, max_steps=max_steps,
                               save_strategy=save_strategy, save_steps=100000, max_length=32, seed=7,
                               disable_tqdm=True, threads=1, report_to=["none"])
trainer = berth.Trainer(model="bert-tiny", tokenizer=tiny_bert_dir(), config_overrides=PRESET_OVERRIDES,
                        args=args, train_dataset=spam_ham_rows(48, 0), eval_dataset=spam_ham_rows(10, 1))
print("ready", flush=True)
result = trainer.train()
print("done", result.global_step, flush=True)
