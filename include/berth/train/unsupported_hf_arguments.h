// The HF TrainingArguments fields berth knows of but does not implement (fp16_opt_level, push_to_hub ...):
// a command line refuses them, a JSON file (HF's own training_args.json) has them ignored with one warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace berth::train {

// transformers 4.4x and 5.x TrainingArguments fields that berth does not implement, sorted.
const std::vector<std::string>& unsupported_hf_training_arguments();

// Whether `name` is one of unsupported_hf_training_arguments().
bool is_unsupported_hf_training_argument(std::string_view name);

// Throws berth::Error for `name` set on a command line (set_training_argument): leave it out.
[[noreturn]] void refuse_unsupported_hf_training_argument(std::string_view name);

// The one warning line for the unsupported keys a JSON file held: "SOURCE: ignored N HF training
// argument(s) berth does not implement: a, b" with `names` sorted.
std::string ignored_hf_training_arguments_warning(const std::string& source, std::vector<std::string> names);

}  // namespace berth::train
