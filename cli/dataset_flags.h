// The data flags `berth train` and `berth eval` share: the bundled SpamAssassin split or JSONL/CSV/TSV files.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "berth/data/label_map.h"
#include "berth/data/text_dataset.h"

namespace berth::cli {

struct DatasetFlags {
  std::string data;  // "spamassassin" or empty
  std::string train, eval, test;
  std::string text_column = "text";
  std::string text_pair_column;
  std::string label_column = "label";
  std::string problem_type = "single_label_classification";
  uint64_t split_seed = 42;
  std::string data_dir;  // the SpamAssassin npm data folder; empty: found as default_spam_assassin_dir says
};

void add_dataset_flags(CLI::App& command, DatasetFlags& flags, bool training);

struct LoadedDatasets {
  std::optional<data::TextDataset> train, eval, test;
  data::LabelMap label_map;
  data::ProblemType problem_type = data::ProblemType::SingleLabel;
  std::string description;  // "SpamAssassin (5919 emails: 4735 train, 592 validation, 592 test)"
};

// Reads what the flags name. The labels come from `fixed` (a model's config) when given, else from the
// training file; eval and test files must use the same labels.
LoadedDatasets load_datasets(const DatasetFlags& flags, const std::optional<data::LabelMap>& fixed);

}  // namespace berth::cli
