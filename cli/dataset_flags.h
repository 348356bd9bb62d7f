// The data flags `berth train` and `berth eval` share: the bundled SpamAssassin split or JSONL/CSV/TSV files.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "berth/data/dataset_source.h"

namespace berth::cli {

// The flags fill a DatasetSource; the library reads it (data::load_datasets).
using DatasetFlags = data::DatasetSource;

void add_dataset_flags(CLI::App& command, DatasetFlags& flags, bool training);

}  // namespace berth::cli
