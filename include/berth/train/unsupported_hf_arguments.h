// The HF TrainingArguments fields berth knows of but does not implement (fp16_opt_level, push_to_hub ...):
// a command line refuses them, a JSON file (HF's own training_args.json) has them ignored with one warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace berth::train {

// transformers 5.24's TrainingArguments fields that berth does not implement, sorted.
const std::vector<std::string>& unsupported_hf_training_arguments();

// transformers 4.4x-4.5x fields that transformers 5 removed (fp16_backend, tp_size ...), sorted.
const std::vector<std::string>& older_hf_training_arguments();

// Whether `name` is one of unsupported_hf_training_arguments() or older_hf_training_arguments().
bool is_unsupported_hf_training_argument(std::string_view name);

// For a key of a JSON file that berth ignores, with its value as JSON text: throws berth::Error (naming
// `source`, the key, its value and the fix) when the value asks for arithmetic berth does not do, so ignoring
// it would change the run's numbers: an optim other than torch's AdamW (adamw_torch, _fused, _xla,
// _npu_fused, adamw_apex_fused), optim_args, optim_target_modules, adafactor, neftune_noise_alpha,
// fp16_full_eval / bf16_full_eval, tf32, ignore_data_skip, per_gpu_*_batch_size, split_batches (also in
// accelerator_config). Their defaults pass.
void check_ignored_hf_training_argument(const std::string& source, std::string_view name,
                                        const std::string& value_json);

// Throws berth::Error for `name` set on a command line (set_training_argument): leave it out.
[[noreturn]] void refuse_unsupported_hf_training_argument(std::string_view name);

// The one warning line for the unsupported keys a JSON file held: "SOURCE: ignored N HF training
// argument(s) berth does not implement: a, b" with `names` sorted.
std::string ignored_hf_training_arguments_warning(const std::string& source, std::vector<std::string> names);

}  // namespace berth::train
