// Tokenising a labelled text dataset for training: a TextDataset through the Tokenizer.
#include "berth/data/encode_text_dataset.h"

#include <ATen/ATen.h>

#include "berth/core/error.h"

namespace berth::data {

namespace {

// The labels as BertForSequenceClassification's loss takes them (see its forward).
at::Tensor label_tensor(const TextDataset& dataset) {
  const auto rows = static_cast<int64_t>(dataset.size());
  switch (dataset.problem_type()) {
    case ProblemType::SingleLabel: {
      at::Tensor labels = at::empty({rows}, at::kLong);
      for (int64_t i = 0; i < rows; ++i) labels[i] = dataset[i].label;
      return labels;
    }
    case ProblemType::MultiLabel: {
      at::Tensor labels = at::zeros({rows, static_cast<int64_t>(dataset.label_map().size())}, at::kFloat);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t id : dataset[i].labels) labels[i][id] = 1.0f;
      return labels;
    }
    case ProblemType::Regression: {
      at::Tensor labels = at::empty({rows}, at::kFloat);
      for (int64_t i = 0; i < rows; ++i) labels[i] = dataset[i].value;
      return labels;
    }
  }
  BERTH_BUG(false, "unhandled problem type");
  return {};
}

}  // namespace

TokenizedDataset encode_text_dataset(const TextDataset& dataset, const tokenizer::Tokenizer& tokenizer,
                                     const EncodeTextOptions& options) {
  tokenizer::Tokenizer truncating = tokenizer;
  tokenizer::TruncationOptions truncation;
  truncation.max_length = options.max_length;
  truncation.keep_head = options.keep_head;
  truncating.set_truncation(truncation);
  truncating.set_padding(std::nullopt);
  const bool labeled = dataset.size() == 0 || dataset[0].label >= 0 || !dataset[0].labels.empty() ||
                       dataset.problem_type() != ProblemType::SingleLabel;
  TokenizedDatasetOptions build;
  build.threads = options.threads;
  return TokenizedDataset::build(
      dataset.size(),
      [&](size_t row) {
        const TextExample& example = dataset[row];
        std::optional<std::string_view> pair;
        if (example.text_pair) pair = *example.text_pair;
        return truncating.encode(example.text, pair);
      },
      labeled ? label_tensor(dataset) : at::Tensor(), build);
}

}  // namespace berth::data
