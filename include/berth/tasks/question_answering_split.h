// Question answering through `berth train`, `berth eval` and `berth predict`: a split's examples and windows
// (run_qa.py's preprocessing), and SQuAD's exact match and F1 of the answers postprocessed from a model's
// start/end logits (utils_qa.py), for the Trainer's evaluations and for predictions.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/data/question_answering_dataset.h"
#include "berth/data/question_answering_features.h"
#include "berth/tasks/prediction_output.h"
#include "berth/tasks/question_answering_postprocess.h"
#include "berth/tokenizer/tokenizer.h"

namespace berth::tasks {

struct QuestionAnsweringOptions {
  data::QuestionAnsweringColumns columns;
  // Tokens each window shares with the one before; unset: run_qa.py's 128, or a quarter of the window when
  // that is smaller (berth's default window is 128 tokens, run_qa.py's 384).
  std::optional<size_t> doc_stride;
  bool pad_to_max_length = true;
  QuestionAnsweringPostprocessOptions postprocess;
};

// One split's examples and their windows.
struct QuestionAnsweringSplit {
  std::vector<data::QuestionAnsweringExample> examples;
  data::QuestionAnsweringFeatures features;
};

// Reads `path` (see load_question_answering_examples) and cuts its examples into windows of max_length tokens
// (at most the tokenizer's model_max_length, as run_qa.py caps it).
std::shared_ptr<QuestionAnsweringSplit> load_question_answering_split(const std::string& path,
                                                                      const tokenizer::Tokenizer& tokenizer,
                                                                      size_t max_length,
                                                                      const QuestionAnsweringOptions& options,
                                                                      bool labeled);

// The split's answers from (N, T, 2) start/end logits of its windows.
std::vector<QuestionAnsweringAnswer> question_answering_answers(
    const QuestionAnsweringSplit& split, const at::Tensor& logits,
    const QuestionAnsweringPostprocessOptions& options);

// SQuAD's metrics of those answers against the split's gold answers, named as HF's squad metric names them
// ("exact_match", "f1") or, for version_2_with_negative, squad_v2's ("exact", "f1", "total", "HasAns_...",
// "NoAns_..."); unprefixed.
std::map<std::string, double> question_answering_metrics(const QuestionAnsweringSplit& split,
                                                         const at::Tensor& logits,
                                                         const QuestionAnsweringPostprocessOptions& options);

// The Trainer's compute_metrics for these splits: it finds the split whose windows it evaluates.
ComputeMetrics question_answering_compute_metrics(
    std::vector<std::shared_ptr<const QuestionAnsweringSplit>> splits,
    const QuestionAnsweringPostprocessOptions& options);

}  // namespace berth::tasks
