// seqeval's entity-level precision, recall and F1 (its default, conlleval-style mode) and token accuracy:
// run_ner.py's compute_metrics for token classification.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace berth::tasks {

// One entity: its type and the first and last position (positions count across the sequences, which seqeval
// joins with an "O" between them).
struct SeqevalEntity {
  std::string type;
  int64_t begin = 0;
  int64_t end = 0;  // inclusive
  bool operator==(const SeqevalEntity& other) const {
    return type == other.type && begin == other.begin && end == other.end;
  }
};

// seqeval.metrics.sequence_labeling.get_entities without a scheme: the chunks conlleval reads from IOB/IOBES
// tags (an I- after O starts an entity, a change of type ends one).
std::vector<SeqevalEntity> seqeval_entities(const std::vector<std::vector<std::string>>& sequences);

struct SeqevalScores {
  double precision = 0;  // correct entities / predicted entities (0 when none is predicted)
  double recall = 0;     // correct entities / true entities (0 when there are none)
  double f1 = 0;         // their harmonic mean (0 when both are 0)
  double accuracy = 0;   // tags equal to the truth / tags
};

// seqeval's precision_score, recall_score, f1_score (micro average) and accuracy_score. The two lists must
// have the same shape; berth::Error otherwise.
SeqevalScores seqeval_scores(const std::vector<std::vector<std::string>>& truth,
                             const std::vector<std::vector<std::string>>& predicted);

// run_ner.py's compute_metrics: logits (N, T, C) and labels (N, T) (-100 where a token has none: later
// sub-tokens, special tokens, padding) -> {"precision", "recall", "f1", "accuracy"} over the labelled tokens,
// tags named by `label_names` (the model's id2label).
std::map<std::string, double> token_classification_metrics(const at::Tensor& logits, const at::Tensor& labels,
                                                           const std::vector<std::string>& label_names);

}  // namespace berth::tasks
