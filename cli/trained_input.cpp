// How a fine-tuned model reads text: the truncation its `berth train` run used.
#include "trained_input.h"

#include <filesystem>

#include "berth/train/training_arguments.h"

namespace berth::cli {

TrainedInput trained_input(const std::string& model_dir) {
  const std::string path = model_dir + "/training_args.json";
  if (!std::filesystem::exists(path)) return {};
  const train::TrainingArguments args = train::TrainingArguments::load(path);
  TrainedInput input;
  input.max_length = static_cast<size_t>(args.max_length);
  if (args.truncation_keep_head) input.keep_head = static_cast<size_t>(*args.truncation_keep_head);
  return input;
}

}  // namespace berth::cli
