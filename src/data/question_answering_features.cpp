// run_qa.py's prepare_train_features and prepare_validation_features over berth's Tokenizer.
#include "berth/data/question_answering_features.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "berth/core/error.h"

namespace berth::data {
namespace {

constexpr int8_t kContext = 1;  // the context is the second sequence (padding on the right)

// run_qa.py's q.lstrip(); Python strips Unicode whitespace, this the ASCII kind questions start with.
std::string lstrip_question(const std::string& question) {
  const size_t first = question.find_first_not_of(" \t\n\r\f\v");
  return first == std::string::npos ? std::string() : question.substr(first);
}

// Where the model answers "no answer": the CLS token, else the BOS token, else the first (run_qa.py).
int64_t cls_index(const tokenizer::Encoding& e, const tokenizer::Tokenizer& tokenizer) {
  for (const auto& token : {tokenizer.special_tokens.cls, tokenizer.special_tokens.bos}) {
    if (!token) continue;
    const auto id = tokenizer.token_to_id(*token);
    if (!id) continue;
    for (size_t i = 0; i < e.ids.size(); ++i)
      if (e.ids[i] == *id) return static_cast<int64_t>(i);
  }
  return 0;
}

// prepare_train_features: the first answer's tokens when the window holds all of it, else CLS twice.
std::pair<int64_t, int64_t> answer_positions(const tokenizer::Encoding& e,
                                             const QuestionAnsweringExample& example, int64_t cls) {
  if (example.answer_starts.empty()) return {cls, cls};
  const auto start_char = example.answer_starts[0];
  const auto end_char = start_char + code_point_count(example.answer_texts[0]);
  const auto& seq = e.sequence_ids;
  const auto& offsets = e.offsets;
  int64_t first = 0;
  while (seq[static_cast<size_t>(first)] != kContext) ++first;
  auto last = static_cast<int64_t>(e.ids.size()) - 1;
  while (seq[static_cast<size_t>(last)] != kContext) --last;
  if (!(offsets[static_cast<size_t>(first)].first <= start_char &&
        offsets[static_cast<size_t>(last)].second >= end_char))
    return {cls, cls};
  while (first < static_cast<int64_t>(offsets.size()) &&
         offsets[static_cast<size_t>(first)].first <= start_char)
    ++first;
  while (offsets[static_cast<size_t>(last)].second >= end_char) --last;
  return {first - 1, last + 1};
}

tokenizer::Tokenizer window_tokenizer(const tokenizer::Tokenizer& tokenizer,
                                      const QuestionAnsweringFeatureOptions& options) {
  tokenizer::Tokenizer windows = tokenizer;
  tokenizer::TruncationOptions truncation;
  truncation.max_length = options.max_length;
  truncation.strategy = tokenizer::TruncationStrategy::OnlySecond;
  truncation.return_overflowing = true;
  truncation.stride = options.doc_stride;
  windows.set_truncation(truncation);
  std::optional<tokenizer::PaddingOptions> padding;
  if (options.pad_to_max_length) {
    padding.emplace();
    padding->strategy = tokenizer::PaddingStrategy::MaxLength;
    padding->max_length = options.max_length;
    padding->pad_id = tokenizer.pad_token_id();
    if (tokenizer.special_tokens.pad) padding->pad_token = *tokenizer.special_tokens.pad;
  }
  windows.set_padding(padding);
  return windows;
}

std::vector<std::pair<int64_t, int64_t>> context_offsets(const tokenizer::Encoding& e) {
  std::vector<std::pair<int64_t, int64_t>> out(e.ids.size(), {-1, -1});
  for (size_t k = 0; k < e.ids.size(); ++k)
    if (e.sequence_ids[k] == kContext)
      out[k] = {static_cast<int64_t>(e.offsets[k].first), static_cast<int64_t>(e.offsets[k].second)};
  return out;
}

}  // namespace

QuestionAnsweringFeatures prepare_question_answering_features(
    const std::vector<QuestionAnsweringExample>& examples, const tokenizer::Tokenizer& tokenizer,
    const QuestionAnsweringFeatureOptions& options, bool labeled) {
  BERTH_CHECK(options.doc_stride < options.max_length, "question answering: --doc-stride ",
              options.doc_stride, " must be below the window length (--max-length ", options.max_length,
              "). Fix: lower --doc-stride (run_qa.py: 128 for 384 tokens)");
  const tokenizer::Tokenizer windows = window_tokenizer(tokenizer, options);
  std::vector<tokenizer::EncodeInput> inputs;
  inputs.reserve(examples.size());
  for (const auto& example : examples) inputs.push_back({lstrip_question(example.question), example.context});
  std::vector<tokenizer::Encoding> encoded = windows.encode_batch(inputs, true, options.threads);

  QuestionAnsweringFeatures features;
  std::vector<tokenizer::Encoding> rows;
  std::vector<int64_t> positions;
  for (size_t i = 0; i < encoded.size(); ++i) {
    std::vector<tokenizer::Encoding> parts = std::move(encoded[i].overflowing);
    encoded[i].overflowing.clear();
    parts.insert(parts.begin(), std::move(encoded[i]));
    for (tokenizer::Encoding& part : parts) {
      BERTH_BUG(part.overflowing.empty(), "a window with windows of its own");
      BERTH_CHECK(
          std::find(part.sequence_ids.begin(), part.sequence_ids.end(), kContext) != part.sequence_ids.end(),
          "question answering: example ", examples[i].id, "'s question fills the ", options.max_length,
          "-token window, leaving no room for its context. Fix: raise --max-length or shorten it");
      if (labeled) {
        const auto [start, end] = answer_positions(part, examples[i], cls_index(part, tokenizer));
        positions.push_back(start);
        positions.push_back(end);
      }
      features.example_index.push_back(i);
      features.context_offsets.push_back(context_offsets(part));
      rows.push_back(std::move(part));
    }
  }
  at::Tensor labels;
  if (labeled) labels = at::tensor(positions, at::kLong).reshape({-1, 2});
  features.dataset = std::make_shared<TokenizedDataset>(std::move(rows), labels);
  return features;
}

}  // namespace berth::data
