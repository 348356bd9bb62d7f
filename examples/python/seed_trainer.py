# The seed article's HF Trainer script (model_init moving the model to a GPU by hand, then Trainer) with two
# lines changed, marked "berth:": berth's Trainer loads the model itself and places it where the run is (one
# process per device under `berth launch`), so model_init's device and the Trainer's cannot disagree.
#   scripts/python examples/python/seed_trainer.py [MODEL_DIR]     (or any Python after pip install .)
import os
import sys

import torch
from transformers import AutoModelForSequenceClassification
from berth import Trainer, TrainingArguments  # berth: was `from transformers import Trainer, TrainingArguments`

# The seed's 'bert-base-uncased' from the hub; here any local HF model directory (scripts/setup's MiniLM).
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("BERTH_CACHE_DIR", ".cache"),
                                                           "models", "all-MiniLM-L6-v2")


def model_init():
    model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=2)
    # The seed's line: the model moved to a device by hand, which the Trainer may not expect.
    model = model.to('cuda:0' if torch.cuda.is_available() else 'cpu')
    return model


spam = ["free prize click here now", "win cash offer today", "cheap loans click now", "claim your reward now"]
ham = ["meeting tomorrow to review the report", "the build is green again", "lunch at noon?",
       "please read the attached notes before the meeting"]
train_dataset = [{"text": t, "label": "spam"} for t in spam] * 4 + [{"text": t, "label": "ham"} for t in ham] * 4
eval_dataset = [{"text": "win a free prize now", "label": "spam"}, {"text": "review the notes", "label": "ham"}]

training_args = TrainingArguments(
    output_dir='./results',
    num_train_epochs=3,
    per_device_train_batch_size=4,
    eval_strategy="epoch",
    logging_steps=4,
    report_to="none",
)

trainer = Trainer(
    model=MODEL,  # berth: was `model_init=model_init`
    args=training_args,
    train_dataset=train_dataset,
    eval_dataset=eval_dataset,
)
trainer.train()
print(trainer.evaluate())
