// How a fine-tuned model reads text: the truncation its `berth train` run used.
#include "trained_input.h"

#include <filesystem>

namespace berth::cli {

data::EncodeTextOptions encode_options(const train::TrainingArguments& args) {
  data::EncodeTextOptions options;
  options.max_length = static_cast<size_t>(args.max_length);
  if (args.truncation_keep_head) options.keep_head = static_cast<size_t>(*args.truncation_keep_head);
  return options;
}

std::optional<data::EncodeTextOptions> trained_encode_options(const std::string& model_dir) {
  const std::string path = model_dir + "/training_args.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return encode_options(train::TrainingArguments::load(path));
}

}  // namespace berth::cli
