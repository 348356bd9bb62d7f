// Text classification data from JSONL, CSV and TSV files: text (and text pair) with a label per example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "berth/data/label_map.h"

namespace berth::data {

// What a label is, named as HF's config.json problem_type names it.
enum class ProblemType {
  SingleLabel,  // "single_label_classification": one label per example, a string or an integer
  MultiLabel,  // "multi_label_classification": a JSON list of labels per example (CSV/TSV: the cell holds it)
  Regression,  // "regression": one number per example
};

// "single_label_classification", "multi_label_classification", "regression"; anything else -> berth::Error.
ProblemType parse_problem_type(std::string_view text);
std::string to_string(ProblemType type);

struct TextExample {
  std::string text;
  std::optional<std::string> text_pair;
  int64_t label = -1;           // SingleLabel: the id in the dataset's LabelMap (-1 for unlabelled data)
  std::vector<int64_t> labels;  // MultiLabel: the ids, each once, ascending
  double value = 0;             // Regression: the target
  size_t line = 0;              // where the example starts in its file, for messages
};

enum class TextFormat { Auto, Jsonl, Csv, Tsv };

struct TextDatasetOptions {
  TextFormat format = TextFormat::Auto;  // Auto: from the extension (.jsonl/.ndjson, .csv, .tsv/.tab)
  std::string text_column = "text";
  std::optional<std::string> text_pair_column;  // unset: single texts
  std::string label_column = "label";
  ProblemType problem_type = ProblemType::SingleLabel;
  bool labeled = true;  // false: no label column is read (data to predict on)
  // Fixed labels, e.g. from the model's config.json or the training split: a label outside it is an error.
  // Unset: built from the labels this file holds (LabelMap::from_observed).
  std::optional<LabelMap> label_map;
};

class TextDataset {
 public:
  // Reads the whole file. Any problem (missing column or label, empty text, malformed JSON, unterminated
  // quote, wrong column count, unknown label, label of the wrong kind) throws berth::Error
  // "<path>:<line>: ..." saying what was expected, what was found and the fix.
  static TextDataset load(const std::string& path, const TextDatasetOptions& options = {});

  TextDataset(std::vector<TextExample> examples, LabelMap label_map, ProblemType problem_type)
      : examples_(std::move(examples)), label_map_(std::move(label_map)), problem_type_(problem_type) {}

  const std::vector<TextExample>& examples() const { return examples_; }
  const TextExample& operator[](size_t i) const { return examples_[i]; }
  size_t size() const { return examples_.size(); }
  const LabelMap& label_map() const { return label_map_; }
  ProblemType problem_type() const { return problem_type_; }

 private:
  std::vector<TextExample> examples_;
  LabelMap label_map_;
  ProblemType problem_type_ = ProblemType::SingleLabel;
};

// Writes one JSON object per line, {"text": ..., ["text_pair": ...,] "label": ...}, labels by name (a list of
// names for MultiLabel, the number for Regression), so TextDataset::load reads it back. Written to a
// temporary file and renamed into place.
void write_jsonl(const std::string& path, const std::vector<TextExample>& examples, const LabelMap& label_map,
                 ProblemType problem_type);

}  // namespace berth::data
