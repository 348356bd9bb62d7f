// From start/end logits to answer texts, as utils_qa.py's postprocess_qa_predictions does it (transformers'
// examples/pytorch/question-answering): per example, the best span over all its windows, and for SQuAD v2 the
// null answer when its score beats the best span's by more than a threshold.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "berth/data/question_answering_dataset.h"
#include "berth/data/question_answering_features.h"

namespace berth::tasks {

struct QuestionAnsweringPostprocessOptions {
  size_t n_best_size = 20;               // start and end candidates per window, and answers kept per example
  size_t max_answer_length = 30;         // tokens
  bool version_2_with_negative = false;  // SQuAD v2: an example may have no answer
  double null_score_diff_threshold = 0.0;  // v2: answer "" when null score - best span score exceeds this
};

struct QuestionAnsweringAnswer {
  std::string id;
  std::string text;  // the prediction: the best span's text, or "" (v2, no answer)
  // The best non-null span: [start, end) in code points of the context, its text ("empty" and 0, 0 when no
  // window had a valid span, as utils_qa.py fills in), its score (start + end logit) and its probability
  // (softmax over the n best answers' scores).
  size_t start = 0;
  size_t end = 0;
  std::string span_text;
  double score = 0;
  double probability = 0;
  std::optional<double> score_diff;  // v2: the null answer's score minus the best span's
};

// start_logits, end_logits: (N, T) float for the N windows of `features`, in their order (T may exceed a
// window's length: positions past it are never chosen). One answer per example, in example order.
std::vector<QuestionAnsweringAnswer> postprocess_qa_predictions(
    const std::vector<data::QuestionAnsweringExample>& examples,
    const data::QuestionAnsweringFeatures& features, const at::Tensor& start_logits,
    const at::Tensor& end_logits, const QuestionAnsweringPostprocessOptions& options);

}  // namespace berth::tasks
