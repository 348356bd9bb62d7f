// `berth tokenizer train`: trains a WordPiece vocabulary from text files, as HF's BertWordPieceTokenizer
// does.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/tokenizer/bert_normalizer.h"
#include "berth/tokenizer/bert_pre_tokenizer.h"
#include "berth/tokenizer/training_corpus.h"
#include "berth/tokenizer/wordpiece_trainer.h"
#include "command.h"

namespace berth::cli {
namespace {

struct TrainFlags {
  std::vector<std::string> inputs;
  size_t vocab_size = 30000;
  uint64_t min_frequency = 2;
  bool lowercase = true;
  std::vector<std::string> special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  size_t limit_alphabet = 1000;
  std::string output;
};

int run_train(const TrainFlags& flags) {
  BERTH_CHECK(flags.vocab_size > 0, "--vocab-size must be positive. Fix: e.g. --vocab-size 30000");
  tokenizer::BertNormalizerOptions normalizer_options;
  normalizer_options.lowercase = flags.lowercase;
  const tokenizer::BertNormalizer normalizer(normalizer_options);
  // Words as the tokenizer will see them: BertNormalizer, then BertPreTokenizer (HF's trainer does the same).
  const auto counts = tokenizer::count_training_words(
      flags.inputs, [&](std::string_view text, std::vector<std::string>& words) {
        words = tokenizer::BertPreTokenizer::split_strings(normalizer.normalize(text));
      });
  BERTH_CHECK(
      !counts.empty(), "no words found in ", flags.inputs.size(),
      " input file(s). Fix: pass text files with one document per line, or .jsonl with a \"text\" field");

  tokenizer::WordPieceTrainerOptions options;
  options.vocab_size = flags.vocab_size;
  options.min_frequency = flags.min_frequency;
  options.special_tokens = flags.special_tokens;
  options.limit_alphabet = flags.limit_alphabet;
  const std::vector<std::string> vocab = tokenizer::train_wordpiece(counts, options);
  tokenizer::write_wordpiece_files(flags.output, vocab, flags.lowercase);

  uint64_t words = 0;
  for (const auto& [word, count] : counts) words += count;
  std::cout << "trained a WordPiece vocabulary of " << vocab.size() << " tokens from " << words << " words ("
            << counts.size() << " distinct) in " << flags.inputs.size() << " file(s)\n"
            << "wrote " << flags.output << "/vocab.txt and " << flags.output << "/tokenizer_config.json\n";
  if (vocab.size() < flags.vocab_size)
    std::cout << "note: the corpus allowed only " << vocab.size() << " of the " << flags.vocab_size
              << " tokens asked for (no pair left to merge at --min-frequency " << flags.min_frequency
              << ")\n";
  return 0;
}

}  // namespace

CommandAction add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "Work with tokenizers: train a WordPiece vocabulary");
  cmd->require_subcommand(1);
  auto* train = cmd->add_subcommand(
      "train",
      "Train a WordPiece vocabulary (as HF's BertWordPieceTokenizer) and write vocab.txt and "
      "tokenizer_config.json");
  auto flags = std::make_shared<TrainFlags>();
  train
      ->add_option("--input", flags->inputs,
                   "Text files (one document per line) or .jsonl with a \"text\" field")
      ->required()
      ->check(CLI::ExistingFile);
  train->add_option("--vocab-size", flags->vocab_size, "Tokens in the vocabulary, special tokens included")
      ->required();
  train->add_option("--output", flags->output, "Folder for vocab.txt and tokenizer_config.json")->required();
  train->add_option("--min-frequency", flags->min_frequency, "Never merge a pair seen fewer times")
      ->capture_default_str();
  train
      ->add_flag("--lowercase,!--no-lowercase", flags->lowercase,
                 "Lowercase and strip accents before training (uncased models)")
      ->capture_default_str();
  train
      ->add_option("--special-tokens", flags->special_tokens,
                   "Special tokens, given the first ids in this order: comma-separated or repeated")
      ->delimiter(',')
      // Without this CLI11 reads "[UNK]" as a one-element list and drops the brackets.
      ->allow_extra_args(false)
      ->capture_default_str();
  train
      ->add_option("--limit-alphabet", flags->limit_alphabet,
                   "Keep only this many of the most frequent characters")
      ->capture_default_str();
  return [flags, train] {
    if (!*train) return 2;
    return run_train(*flags);
  };
}

}  // namespace berth::cli
