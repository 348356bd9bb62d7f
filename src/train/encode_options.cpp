// The truncation of a run's arguments, and of the run that trained a model directory.
#include "berth/train/encode_options.h"

#include <filesystem>

namespace berth::train {

data::EncodeTextOptions encode_options(const TrainingArguments& args) {
  data::EncodeTextOptions options;
  options.max_length = static_cast<size_t>(args.max_length);
  if (args.truncation_keep_head) options.keep_head = static_cast<size_t>(*args.truncation_keep_head);
  return options;
}

std::optional<data::EncodeTextOptions> trained_encode_options(const std::string& model_dir) {
  const std::string path = model_dir + "/training_args.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return encode_options(TrainingArguments::load(path));
}

}  // namespace berth::train
