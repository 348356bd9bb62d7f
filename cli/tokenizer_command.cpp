// `berth tokenizer train`: trains a WordPiece vocabulary (as HF's BertWordPieceTokenizer) or a byte-level BPE
// (as HF's ByteLevelBPETokenizer) from text files.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/tokenizer/bert_normalizer.h"
#include "berth/tokenizer/bert_pre_tokenizer.h"
#include "berth/tokenizer/bpe_trainer.h"
#include "berth/tokenizer/byte_level.h"
#include "berth/tokenizer/byte_level_bpe_files.h"
#include "berth/tokenizer/training_corpus.h"
#include "berth/tokenizer/wordpiece_trainer.h"
#include "command.h"

namespace berth::cli {
namespace {

const std::vector<std::string> kWordPieceSpecials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
const std::vector<std::string> kBpeSpecials = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};

struct TrainFlags {
  std::string model = "wordpiece";
  std::vector<std::string> inputs;
  int64_t vocab_size = 0;
  int64_t min_frequency = 2;
  bool lowercase = true;
  std::vector<std::string> special_tokens;  // unset: the model's default
  std::optional<int64_t> limit_alphabet;    // unset: 1000 for WordPiece, none for BPE
  bool add_prefix_space = false;
  std::optional<int64_t> max_token_length;
  std::string output;
  // Which flags the command line gave (CLI11 counts them).
  bool gave_lowercase = false;
  bool gave_special_tokens = false;
};

// Refuses values and flag combinations HF would reject or ignore, before the corpus is read.
void check_flags(const TrainFlags& flags) {
  BERTH_CHECK(flags.model == "bpe" || flags.model == "wordpiece", "--model must be bpe or wordpiece, found '",
              flags.model,
              "'. Fix: --model bpe for a byte-level BPE (GPT-2, RoBERTa, Llama 3 style) or --model wordpiece "
              "(BERT)");
  BERTH_CHECK(flags.vocab_size >= 1, "--vocab-size must be >= 1, found ", flags.vocab_size,
              ". Fix: e.g. --vocab-size 30000");
  BERTH_CHECK(flags.min_frequency >= 0, "--min-frequency must be >= 0, found ", flags.min_frequency,
              ". Fix: e.g. --min-frequency 2");
  BERTH_CHECK(!flags.limit_alphabet || *flags.limit_alphabet >= 1, "--limit-alphabet must be >= 1, found ",
              flags.limit_alphabet.value_or(0), ". Fix: leave it out to keep every character");
  BERTH_CHECK(!flags.max_token_length || *flags.max_token_length >= 1,
              "--max-token-length must be >= 1, found ", flags.max_token_length.value_or(0),
              ". Fix: leave it out for no limit");
  const bool bpe = flags.model == "bpe";
  BERTH_CHECK(bpe || !flags.add_prefix_space,
              "--add-prefix-space is for --model bpe, found --model wordpiece. Fix: leave out "
              "--add-prefix-space, or pass --model bpe");
  BERTH_CHECK(bpe || !flags.max_token_length,
              "--max-token-length is for --model bpe, found --model wordpiece. Fix: leave out "
              "--max-token-length, or pass --model bpe");
  BERTH_CHECK(!bpe || !flags.gave_lowercase,
              "--lowercase and --no-lowercase are for --model wordpiece, found --model bpe (a byte-level BPE "
              "keeps the text as it is, as HF's ByteLevelBPETokenizer does). Fix: leave them out");
}

// The special tokens asked for: the model's default when the flag is absent; empty items left out, so
// --special-tokens '' asks for none.
std::vector<std::string> special_tokens(const TrainFlags& flags) {
  if (!flags.gave_special_tokens) return flags.model == "bpe" ? kBpeSpecials : kWordPieceSpecials;
  std::vector<std::string> tokens;
  for (const std::string& token : flags.special_tokens)
    if (!token.empty()) tokens.push_back(token);
  return tokens;
}

void report(const TrainFlags& flags, const std::unordered_map<std::string, uint64_t>& counts, size_t tokens,
            const std::string& what, const std::string& files) {
  uint64_t words = 0;
  for (const auto& [word, count] : counts) words += count;
  std::cout << "trained " << what << " of " << tokens << " tokens from " << words << " words ("
            << counts.size() << " distinct) in " << flags.inputs.size() << " file(s)\n"
            << "wrote " << files << "\n";
  if (tokens < static_cast<size_t>(flags.vocab_size))
    std::cout << "note: the corpus allowed only " << tokens << " of the " << flags.vocab_size
              << " tokens asked for (no pair left to merge at --min-frequency " << flags.min_frequency
              << ")\n";
}

void check_words(const TrainFlags& flags, const std::unordered_map<std::string, uint64_t>& counts) {
  BERTH_CHECK(
      !counts.empty(), "no words found in ", flags.inputs.size(),
      " input file(s). Fix: pass text files with one document per line, or .jsonl with a \"text\" field");
}

int run_wordpiece(const TrainFlags& flags) {
  tokenizer::BertNormalizerOptions normalizer_options;
  normalizer_options.lowercase = flags.lowercase;
  const tokenizer::BertNormalizer normalizer(normalizer_options);
  // Words as the tokenizer will see them: BertNormalizer, then BertPreTokenizer (HF's trainer does the same).
  const auto counts = tokenizer::count_training_words(
      flags.inputs, [&](std::string_view text, std::vector<std::string>& words) {
        words = tokenizer::BertPreTokenizer::split_strings(normalizer.normalize(text));
      });
  check_words(flags, counts);

  tokenizer::WordPieceTrainerOptions options;
  options.vocab_size = static_cast<size_t>(flags.vocab_size);
  options.min_frequency = static_cast<uint64_t>(flags.min_frequency);
  options.special_tokens = special_tokens(flags);
  options.limit_alphabet = static_cast<size_t>(flags.limit_alphabet.value_or(1000));
  const std::vector<std::string> vocab = tokenizer::train_wordpiece(counts, options);
  tokenizer::write_wordpiece_files(flags.output, vocab, flags.lowercase);
  report(flags, counts, vocab.size(), "a WordPiece vocabulary",
         flags.output + "/vocab.txt and " + flags.output + "/tokenizer_config.json");
  return 0;
}

int run_bpe(const TrainFlags& flags) {
  // Words as HF's Tokenizer.train(files) sees them behind ByteLevel: each line with its line break.
  const auto counts = tokenizer::count_training_words(
      flags.inputs,
      [&](std::string_view text, std::vector<std::string>& words) {
        tokenizer::byte_level_words(text, flags.add_prefix_space, words);
      },
      tokenizer::TextLines::WithEndings);
  check_words(flags, counts);

  // HF's ByteLevelBPETokenizer.train: BpeTrainer with the 256 byte characters as the initial alphabet.
  tokenizer::BpeTrainerOptions options;
  options.vocab_size = static_cast<size_t>(flags.vocab_size);
  options.min_frequency = static_cast<uint64_t>(flags.min_frequency);
  options.special_tokens = special_tokens(flags);
  if (flags.limit_alphabet) options.limit_alphabet = static_cast<size_t>(*flags.limit_alphabet);
  options.initial_alphabet = tokenizer::byte_level_alphabet();
  if (flags.max_token_length) options.max_token_length = static_cast<size_t>(*flags.max_token_length);
  const tokenizer::TrainedBpe bpe = tokenizer::train_bpe(counts, options);
  tokenizer::write_byte_level_bpe_files(flags.output, bpe, options.special_tokens, flags.add_prefix_space);
  report(flags, counts, bpe.vocab.size(),
         "a byte-level BPE (" + std::to_string(bpe.merges.size()) + " merges)",
         flags.output + "/tokenizer.json and " + flags.output + "/tokenizer_config.json");
  return 0;
}

void add_train_flags(CLI::App& train, TrainFlags& flags) {
  train
      .add_option("--model", flags.model,
                  "bpe: byte-level BPE (as HF's ByteLevelBPETokenizer); wordpiece: BERT's")
      ->capture_default_str();
  train
      .add_option("--input", flags.inputs,
                  "Text files (one document per line) or .jsonl with a \"text\" field")
      ->required()
      ->check(CLI::ExistingFile);
  train.add_option("--vocab-size", flags.vocab_size, "Tokens in the vocabulary, special tokens included")
      ->required();
  train.add_option("--output", flags.output, "Folder for the tokenizer's files")->required();
  train.add_option("--min-frequency", flags.min_frequency, "Never merge a pair seen fewer times")
      ->capture_default_str();
  train
      .add_flag("--lowercase,!--no-lowercase", flags.lowercase,
                "wordpiece: lowercase and strip accents before training (uncased models)")
      ->capture_default_str();
  train
      .add_option(
          "--special-tokens", flags.special_tokens,
          "Special tokens, given the first ids in this order: comma-separated or repeated; '' for none")
      ->delimiter(',')
      // Without this CLI11 reads "[UNK]" as a one-element list and drops the brackets.
      ->allow_extra_args(false)
      ->default_str("[PAD],[UNK],[CLS],[SEP],[MASK] for wordpiece; <s>,<pad>,</s>,<unk>,<mask> for bpe");
  train
      .add_option(
          "--limit-alphabet", flags.limit_alphabet,
          "Keep only this many of the most frequent characters (for bpe the 256 bytes always count as "
          "the most frequent)")
      ->default_str("1000 for wordpiece; none for bpe");
  train
      .add_flag(
          "--add-prefix-space", flags.add_prefix_space,
          "bpe: put a space before each text, so a first word is tokenized as any other (RoBERTa); off by "
          "default, as in HF's ByteLevelBPETokenizer")
      ->capture_default_str();
  train
      .add_option("--max-token-length", flags.max_token_length,
                  "bpe: merge no token as long as this (in characters) beyond the first merges")
      ->default_str("none");
}

}  // namespace

CommandAction add_tokenizer_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("tokenizer", "Work with tokenizers: train a WordPiece or byte-level BPE one");
  cmd->require_subcommand(1);
  auto* train = cmd->add_subcommand(
      "train",
      "Train a WordPiece vocabulary (vocab.txt, tokenizer_config.json; as HF's BertWordPieceTokenizer) or a "
      "byte-level BPE (tokenizer.json, tokenizer_config.json; as HF's ByteLevelBPETokenizer)");
  auto flags = std::make_shared<TrainFlags>();
  add_train_flags(*train, *flags);
  return [flags, train] {
    if (!*train) return 2;
    flags->gave_lowercase = train->get_option("--lowercase")->count() > 0;
    flags->gave_special_tokens = train->get_option("--special-tokens")->count() > 0;
    check_flags(*flags);
    return flags->model == "bpe" ? run_bpe(*flags) : run_wordpiece(*flags);
  };
}

}  // namespace berth::cli
