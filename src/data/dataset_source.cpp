// load_datasets: the bundled SpamAssassin split or the user's JSONL/CSV/TSV files, with one set of labels.
#include "berth/data/dataset_source.h"

#include <filesystem>

#include "berth/core/error.h"
#include "berth/data/spam_assassin.h"

namespace berth::data {

LoadedDatasets load_datasets(const DatasetSource& flags, const std::optional<LabelMap>& fixed) {
  LoadedDatasets loaded;
  if (flags.data == "spamassassin") {
    BERTH_CHECK(flags.train.empty() && flags.eval.empty() && flags.test.empty(),
                "--data spamassassin brings its own train/validation/test split, but --train/--eval/--test "
                "were given too. Fix: pass either --data or the files");
    // The checkout whose .cache holds the npm data: the current directory when it has one (a clone being
    // worked in), else the source tree this berth was built from.
    const std::string checkout =
        std::filesystem::exists(".cache/npm") || flags.checkout_dir.empty() ? "." : flags.checkout_dir;
    const std::string data_dir =
        flags.data_dir.empty() ? default_spam_assassin_dir(checkout) : flags.data_dir;
    SpamAssassinOptions options;
    options.seed = flags.split_seed;
    SpamAssassinCorpus corpus = load_spam_assassin(data_dir, options);
    loaded.label_map = corpus.label_map;
    if (fixed) {
      BERTH_CHECK(*fixed == corpus.label_map, "the model's labels (", fixed->describe(),
                  ") are not SpamAssassin's (", corpus.label_map.describe(),
                  "). Fix: evaluate a model fine-tuned on --data spamassassin");
    }
    const auto type = ProblemType::SingleLabel;
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
  TextDatasetOptions options;
  options.text_column = flags.text_column;
  if (!flags.text_pair_column.empty()) options.text_pair_column = flags.text_pair_column;
  options.label_column = flags.label_column;
  options.labeled = flags.labeled;
  options.problem_type = parse_problem_type(flags.problem_type);
  loaded.problem_type = options.problem_type;
  if (fixed) options.label_map = *fixed;
  if (!flags.train.empty()) {
    loaded.train = TextDataset::load(flags.train, options);
    options.label_map = loaded.train->label_map();  // eval and test must use the training labels
  }
  if (!flags.eval.empty()) loaded.eval = TextDataset::load(flags.eval, options);
  if (!flags.test.empty()) loaded.test = TextDataset::load(flags.test, options);
  for (const auto* set : {&loaded.train, &loaded.eval, &loaded.test}) {
    if (*set) {
      loaded.label_map = (*set)->label_map();
      break;
    }
  }
  loaded.description = flags.train.empty() ? flags.eval : flags.train;
  return loaded;
}

}  // namespace berth::data
