# One call before trainer.train() in an existing HF script: what is on which device, with the fix. The model
# here is split the way a partial device_map / low_cpu_mem_usage load leaves it: one layer never materialised
# (on meta), the rest on the CPU.
#   scripts/python examples/python/explain_placement.py [MODEL_DIR]
import os
import sys

import berth
from transformers import AutoModelForSequenceClassification

MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("BERTH_CACHE_DIR", ".cache"),
                                                           "models", "all-MiniLM-L6-v2")
model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=2)
model.bert.encoder.layer[-1].to("meta")  # the last layer

print(berth.explain_placement(model))
