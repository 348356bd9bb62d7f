// DatasetSource: where a run's text comes from (the bundled SpamAssassin split, or JSONL/CSV/TSV files), and
// the datasets read from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "berth/data/label_map.h"
#include "berth/data/text_dataset.h"

namespace berth::data {

struct DatasetSource {
  std::string data;  // "spamassassin" or empty
  std::string train, eval, test;
  std::string text_column = "text";
  std::string text_pair_column;
  std::string label_column = "label";
  bool labeled = true;  // false: the files' labels are not read (a language model learns from the text alone)
  std::string problem_type = "single_label_classification";
  uint64_t split_seed = 42;
  std::string data_dir;  // the SpamAssassin npm data folder; empty: found as default_spam_assassin_dir says
  // The checkout whose .cache holds the npm data when the current directory has none (the CLI passes the
  // source tree it was built from); empty: the current directory.
  std::string checkout_dir;
};

struct LoadedDatasets {
  std::optional<TextDataset> train, eval, test;
  LabelMap label_map;
  ProblemType problem_type = ProblemType::SingleLabel;
  std::string description;  // "SpamAssassin (5919 emails: 4735 train, 592 validation, 592 test)"
};

// Reads what the source names. The labels come from `fixed` (a model's config) when given, else from the
// training file; eval and test files must use the same labels.
LoadedDatasets load_datasets(const DatasetSource& source, const std::optional<LabelMap>& fixed);

}  // namespace berth::data
