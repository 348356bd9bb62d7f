// What the Trainer's loops and the collator read of a task (its recipe's traits), and how HF's label
// smoothing treats it; small enough for the headers that need only these.
#pragma once

#include "berth/data/data_loader.h"

namespace berth::tasks {

// How the Trainer's evaluation gathers a dataset's predictions.
enum class Evaluation {
  Loss,         // language models: each batch's loss (and perplexity); the (N, T, vocab) logits are not kept
  RowLogits,    // a class or value per row: (N, C) logits and the problem type's metrics
  TokenLogits,  // a class per token: (N, T, C) logits and seqeval's metrics
  SpanLogits,   // question answering: (N, T, 2) start/end logits; the metrics come from compute_metrics
};

// How HF's Trainer treats label_smoothing_factor for a model of this kind.
enum class LabelSmoothing {
  Applies,       // classification, token classification, masked and causal LMs
  Disabled,      // multi-label classification: HF warns and trains without it
  NotPredicted,  // question answering: its batches carry start/end positions, not "labels"
};

// What the collator and the Trainer's loops read of a task.
struct TaskTraits {
  data::BatchLabels batch_labels = data::BatchLabels::Dataset;  // what a batch holds as its labels
  Evaluation evaluation = Evaluation::RowLogits;
  bool shifts_labels = false;  // position t predicts label t + 1 (causal LMs), as HF's loss shifts them
  bool packs_blocks = false;   // --block-size may pack its texts into blocks (language models)
};

}  // namespace berth::tasks
