// Question answering's data, answers and metrics for the Trainer, berth eval and berth predict.
#include "berth/tasks/question_answering_split.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "berth/core/error.h"
#include "berth/tasks/squad_metrics.h"

namespace berth::tasks {

std::shared_ptr<QuestionAnsweringSplit> load_question_answering_split(const std::string& path,
                                                                      const tokenizer::Tokenizer& tokenizer,
                                                                      size_t max_length,
                                                                      const QuestionAnsweringOptions& options,
                                                                      bool labeled) {
  auto split = std::make_shared<QuestionAnsweringSplit>();
  split->examples = data::load_question_answering_examples(path, options.columns, labeled);
  data::QuestionAnsweringFeatureOptions windows;
  windows.max_length = std::min(max_length, tokenizer.model_max_length.value_or(max_length));
  windows.doc_stride = options.doc_stride.value_or(std::min<size_t>(128, windows.max_length / 4));
  windows.pad_to_max_length = options.pad_to_max_length;
  split->features = data::prepare_question_answering_features(split->examples, tokenizer, windows, labeled);
  return split;
}

std::vector<QuestionAnsweringAnswer> question_answering_answers(
    const QuestionAnsweringSplit& split, const at::Tensor& logits,
    const QuestionAnsweringPostprocessOptions& options) {
  BERTH_BUG(logits.dim() == 3 && logits.size(2) == 2, "question answering logits must be (N, T, 2)");
  return postprocess_qa_predictions(split.examples, split.features, logits.select(2, 0), logits.select(2, 1),
                                    options);
}

std::map<std::string, double> question_answering_metrics(const QuestionAnsweringSplit& split,
                                                         const at::Tensor& logits,
                                                         const QuestionAnsweringPostprocessOptions& options) {
  std::vector<std::string> predictions;
  for (const QuestionAnsweringAnswer& answer : question_answering_answers(split, logits, options))
    predictions.push_back(answer.text);
  std::vector<std::vector<std::string>> golds;
  for (const data::QuestionAnsweringExample& example : split.examples) golds.push_back(example.answer_texts);
  if (options.version_2_with_negative) return squad_v2_metrics(predictions, golds);
  for (const data::QuestionAnsweringExample& example : split.examples)
    BERTH_CHECK(
        !example.answer_texts.empty(), "question answering: example ", example.id,
        " has no answer, which SQuAD v1.1's metric cannot score. Fix: --version-2-with-negative (SQuAD "
        "v2: questions may have no answer), or give every question an answer");
  return squad_metrics(predictions, golds);
}

ComputeMetrics question_answering_compute_metrics(
    std::vector<std::shared_ptr<const QuestionAnsweringSplit>> splits,
    const QuestionAnsweringPostprocessOptions& options) {
  return [splits = std::move(splits), options](const EvalPrediction& prediction) {
    for (const auto& split : splits)
      if (split && split->features.dataset.get() == prediction.dataset)
        return question_answering_metrics(*split, prediction.logits, options);
    return std::map<std::string, double>();  // rows of no known split: loss only
  };
}

}  // namespace berth::tasks
