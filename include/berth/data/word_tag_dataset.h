// Token classification data: rows of pre-split words with one tag per word (run_ner.py's tokens/ner_tags),
// the label list, and the words encoded with their tags aligned to sub-tokens as run_ner.py aligns them.
#pragma once

#include "berth/data/label_map.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/tokenizer/tokenizer.h"

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace berth::data {

struct WordTagExample {
  std::vector<std::string> words;
  std::vector<int64_t> tags;  // one label id per word; empty when unlabelled
  size_t line = 0;            // where the row is in its file, for messages
};

struct WordTagOptions {
  std::string tokens_column = "tokens";  // run_ner.py's defaults
  std::string tags_column = "ner_tags";
  bool labeled = true;  // false: the tags column is not read (data to predict on)
  // The labels ids refer to (a fine-tuned model's id2label): tags must be among them, and integer tags index
  // them. Unset: run_ner.py's get_label_list, the sorted unique tags of this file (then tags must be names).
  std::optional<LabelMap> label_map;
};

class WordTagDataset {
 public:
  // Reads a JSONL file, one object per line. A missing or non-list column, a word that is not a string, a row
  // whose tags and words differ in length, an unknown tag or an integer tag without a label list throw
  // berth::Error "<path>:<line>: ..." with the fix.
  static WordTagDataset load(const std::string& path, const WordTagOptions& options = {});

  WordTagDataset(std::vector<WordTagExample> examples, LabelMap label_map)
      : examples_(std::move(examples)), label_map_(std::move(label_map)) {}

  const std::vector<WordTagExample>& examples() const { return examples_; }
  size_t size() const { return examples_.size(); }
  const LabelMap& label_map() const { return label_map_; }

 private:
  std::vector<WordTagExample> examples_;
  LabelMap label_map_;
};

// run_ner.py's tokenize_and_align_labels with label_all_tokens=False: each word's first sub-token gets the
// word's tag, later sub-tokens and special tokens (word id -1) -100. word_ids: HF's word_ids() of one row.
std::vector<int64_t> align_word_tags(const std::vector<int64_t>& word_ids, const std::vector<int64_t>& tags);

// Every row's words encoded (Tokenizer::encode_words, truncated at max_length tokens, no padding) with the
// aligned tags as labels: (N, L) int64, L the longest encoding, -100 past each row's end; undefined labels
// when the dataset has no tags. The encodings keep their word_ids.
TokenizedDataset encode_word_tags(const WordTagDataset& dataset, const tokenizer::Tokenizer& tokenizer,
                                  size_t max_length);

// DataCollatorForTokenClassification's labels: rows of (N, L) per-token labels -> (B, length), cut or padded
// on the right with -100.
at::Tensor collate_token_labels(const at::Tensor& labels, const std::vector<size_t>& rows, int64_t length);

}  // namespace berth::data
