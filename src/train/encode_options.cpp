// The truncation of a run's arguments, and of the run that trained a model directory; the default length
// a model and its tokenizer allow.
#include "berth/train/encode_options.h"

#include <filesystem>

#include "berth/core/error.h"

namespace berth::train {

data::EncodeTextOptions encode_options(const TrainingArguments& args) {
  BERTH_BUG(args.max_length.has_value(), "encode_options: max_length is unset; resolve_max_length first");
  data::EncodeTextOptions options;
  options.max_length = static_cast<size_t>(*args.max_length);
  if (args.truncation_keep_head) options.keep_head = static_cast<size_t>(*args.truncation_keep_head);
  return options;
}

std::optional<data::EncodeTextOptions> trained_encode_options(const std::string& model_dir) {
  const std::string path = model_dir + "/training_args.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  const TrainingArguments args = TrainingArguments::load(path);
  if (!args.max_length) return std::nullopt;
  return encode_options(args);
}

void resolve_max_length(TrainingArguments& args, int64_t max_positions,
                        std::optional<size_t> model_max_length) {
  if (args.max_length) {
    BERTH_CHECK(*args.max_length <= max_positions, "train: --max_length ", *args.max_length,
                " exceeds the model's max_position_embeddings (", max_positions, "). Fix: --max_length ",
                max_positions, " or less, or leave it unset for the model's limit");
  } else {
    args.max_length = model_input_limit(max_positions, model_max_length);
  }
  args.validate();
}

}  // namespace berth::train
