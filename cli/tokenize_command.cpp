// `berth tokenize --tokenizer DIR --input FILE.jsonl [...]`: tokenizes {"text", "text_pair"?} lines as HF
// tokenizers does and writes {"input_ids", "token_type_ids", "attention_mask", "offsets"} lines in order.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/core/output_path.h"
#include "berth/data/text_inputs.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "command.h"
#include "count_flag.h"

namespace berth::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string input;
  std::string output;      // empty: stdout
  size_t max_length = 0;   // 0: tokenizer_config.json's model_max_length where one is needed
  std::string truncation;  // empty: no truncation
  std::string padding;     // empty: no padding
  bool no_special_tokens = false;
};

size_t length_for(const TokenizeOptions& options, const tokenizer::Tokenizer& t, const char* what) {
  if (options.max_length > 0) return options.max_length;
  BERTH_CHECK(t.model_max_length, what, " needs a length, and ", options.tokenizer,
              "/tokenizer_config.json has no model_max_length. Fix: pass --max-length N");
  return *t.model_max_length;
}

void configure(const TokenizeOptions& options, tokenizer::Tokenizer& t) {
  using tokenizer::TruncationStrategy;
  if (!options.truncation.empty()) {
    tokenizer::TruncationOptions truncation;
    truncation.max_length = length_for(options, t, "--truncation");
    truncation.strategy = options.truncation == "only_first"    ? TruncationStrategy::OnlyFirst
                          : options.truncation == "only_second" ? TruncationStrategy::OnlySecond
                                                                : TruncationStrategy::LongestFirst;
    t.set_truncation(truncation);
  } else {
    t.set_truncation(std::nullopt);
  }
  if (!options.padding.empty()) {
    tokenizer::PaddingOptions padding;
    if (t.padding()) padding = *t.padding();  // keep tokenizer.json's pad id and direction
    BERTH_CHECK(t.special_tokens.pad, "--padding needs a pad token, and ", options.tokenizer,
                "/tokenizer_config.json names none (pad_token). Fix: add \"pad_token\" there, or leave out "
                "--padding");
    padding.pad_token = *t.special_tokens.pad;
    padding.pad_id = t.pad_token_id();
    padding.strategy = options.padding == "max_length" ? tokenizer::PaddingStrategy::MaxLength
                                                       : tokenizer::PaddingStrategy::Longest;
    if (padding.strategy == tokenizer::PaddingStrategy::MaxLength)
      padding.max_length = length_for(options, t, "--padding max_length");
    t.set_padding(padding);
  } else {
    t.set_padding(std::nullopt);
  }
}

void write_line(std::ostream& out, const tokenizer::Encoding& e) {
  nlohmann::json offsets = nlohmann::json::array();
  for (const auto& [start, end] : e.offsets) offsets.push_back({start, end});
  nlohmann::json line = {{"input_ids", e.ids},
                         {"token_type_ids", e.type_ids},
                         {"attention_mask", e.attention_mask},
                         {"offsets", offsets}};
  out << line.dump() << '\n';
}

int run(const TokenizeOptions& options) {
  if (!options.output.empty()) check_output_file(options.output, "--output");
  tokenizer::Tokenizer t = tokenizer::load_tokenizer(options.tokenizer);
  configure(options, t);
  std::vector<data::TextInputLine> lines = data::read_text_inputs(options.input);
  std::vector<tokenizer::EncodeInput> inputs = data::encode_inputs(lines);
  const bool special = !options.no_special_tokens;
  std::vector<tokenizer::Encoding> encodings;
  try {
    encodings = t.encode_batch(inputs, special);
  } catch (const Error&) {
    // Find the first failing line again, one by one, to name it.
    for (const data::TextInputLine& line : lines) {
      try {
        std::optional<std::string_view> pair;
        if (line.input.text_pair) pair = *line.input.text_pair;
        t.encode(line.input.text, pair, special);
      } catch (const Error& e) {
        BERTH_FAIL(options.input, ":", line.number, ": ", e.what());
      }
    }
    throw;
  }

  if (options.output.empty()) {
    for (const auto& e : encodings) write_line(std::cout, e);
    std::cout.flush();
    return 0;
  }
  // Written beside the destination and renamed: a failed run leaves no half-written output.
  write_file_atomically(options.output, [&](std::ostream& out) {
    for (const auto& e : encodings) write_line(out, e);
  });
  return 0;
}

}  // namespace

CommandAction add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize JSONL text exactly as HF tokenizers does: one {\"text\", \"text_pair\"?} per line in, "
      "one {\"input_ids\", \"token_type_ids\", \"attention_mask\", \"offsets\"} per line out");
  auto options = std::make_shared<TokenizeOptions>();
  cmd->add_option("--tokenizer", options->tokenizer,
                  "Tokenizer directory: tokenizer.json and/or vocab.txt, "
                  "tokenizer_config.json")
      ->required();
  cmd->add_option("--input", options->input, "JSONL file: {\"text\": ..., \"text_pair\"?: ...} per line")
      ->required();
  cmd->add_option("--output", options->output, "JSONL file to write (default: stdout)");
  cmd->add_option("--max-length", options->max_length,
                  "Length for --truncation and --padding max_length, special tokens included (0: "
                  "tokenizer_config.json's model_max_length)")
      ->check(whole_number("--max-length 128, or 0 for tokenizer_config.json's model_max_length"))
      ->capture_default_str();
  cmd->add_option("--truncation", options->truncation,
                  "Truncate to --max-length: longest_first (the default when given without a value), "
                  "only_first or only_second")
      ->expected(0, 1)
      ->check(CLI::IsMember({"", "longest_first", "only_first", "only_second"}));
  cmd->add_option("--padding", options->padding,
                  "Pad with the pad token: longest (to the longest input of the file) or max_length")
      ->check(CLI::IsMember({"longest", "max_length"}));
  cmd->add_flag("--no-special-tokens", options->no_special_tokens,
                "Leave out the special tokens the post-processor adds ([CLS]/[SEP], <s>, ...)");
  return [options, cmd] {
    TokenizeOptions run_options = *options;
    if (cmd->count("--truncation") > 0 && run_options.truncation.empty())
      run_options.truncation = "longest_first";
    return run(run_options);
  };
}

}  // namespace berth::cli
