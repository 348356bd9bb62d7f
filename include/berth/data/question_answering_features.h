// Question-answering features as run_qa.py prepares them: each (question, context) pair tokenised with
// only_second truncation into overlapping windows (doc_stride), with the answer's start/end token positions
// (prepare_train_features) and each window's example and context offsets (prepare_validation_features).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "berth/data/question_answering_dataset.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/tokenizer/tokenizer.h"

namespace berth::data {

struct QuestionAnsweringFeatureOptions {
  size_t max_length = 384;        // run_qa.py's max_seq_length: tokens per window, special tokens included
  size_t doc_stride = 128;        // tokens each window shares with the one before
  bool pad_to_max_length = true;  // run_qa.py's default; false: the DataLoader pads per batch
  size_t threads = 0;             // 0: every available CPU
};

struct QuestionAnsweringFeatures {
  // One row per window. Labels (N, 2) int64: the answer's first and last token (the CLS token's index when
  // the window does not hold the whole first answer, or the example has none); undefined when unlabelled.
  std::shared_ptr<TokenizedDataset> dataset;
  std::vector<size_t> example_index;  // the example each window comes from
  // Per window and token: [start, end) in code points of the context, (-1, -1) for tokens outside it.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> context_offsets;
};

// The windows of every example, in example order (each example's windows in order). The question is
// lstripped, as run_qa.py does; padding is on the right (question first). Throws berth::Error when a question
// leaves no room for its context in max_length tokens, or doc_stride does not fit.
QuestionAnsweringFeatures prepare_question_answering_features(
    const std::vector<QuestionAnsweringExample>& examples, const tokenizer::Tokenizer& tokenizer,
    const QuestionAnsweringFeatureOptions& options, bool labeled);

}  // namespace berth::data
