// The HF TrainingArguments fields berth knows of but does not implement: the list, refused on a command line
// and ignored with one warning in a JSON file.
#include "berth/train/unsupported_hf_arguments.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "berth/core/error.h"
#include "core/text.h"

namespace berth::train {
namespace {

// transformers 5.24's TrainingArguments fields (dataclasses.fields) that berth does not implement, sorted.
constexpr std::string_view kUnsupported[] = {
    "accelerator_config",
    "average_tokens_across_devices",
    "batch_eval_metrics",
    "bf16_full_eval",
    "dataloader_in_order",
    "dataloader_multiprocessing_context",
    "dataloader_num_workers",
    "dataloader_persistent_workers",
    "dataloader_pin_memory",
    "dataloader_prefetch_factor",
    "ddp_broadcast_buffers",
    "ddp_static_graph",
    "debug",
    "do_eval",
    "do_predict",
    "do_train",
    "enable_jit_checkpoint",
    "eval_accumulation_steps",
    "eval_delay",
    "eval_do_concat_batches",
    "eval_use_gather_object",
    "fp16_full_eval",
    "fsdp_config",
    "full_determinism",
    "hub_always_push",
    "hub_model_id",
    "hub_private_repo",
    "hub_revision",
    "hub_strategy",
    "hub_token",
    "ignore_data_skip",
    "include_for_metrics",
    "include_num_input_tokens_seen",
    "label_names",
    "length_column_name",
    "liger_kernel_config",
    "local_rank",
    "log_level",
    "log_level_replica",
    "log_on_each_node",
    "neftune_noise_alpha",
    "optim",
    "optim_args",
    "optim_target_modules",
    "parallelism_config",
    "prediction_loss_only",
    "project",
    "push_to_hub",
    "remove_unused_columns",
    "restore_callback_states_from_checkpoint",
    "run_name",
    "skip_memory_metrics",
    "tf32",
    "torch_compile",
    "torch_compile_backend",
    "torch_compile_mode",
    "torch_empty_cache_steps",
    "trackio_bucket_id",
    "trackio_space_id",
    "trackio_static_space_id",
    "use_cache",
    "use_cpu",
    "use_liger_kernel",
};
// Fields of transformers 4.4x-4.5x that transformers 5 removed (its training_args.json files still hold
// them), sorted.
constexpr std::string_view kOlderHf[] = {
    "adafactor",
    "dispatch_batches",
    "fp16_backend",
    "fp16_opt_level",
    "fsdp_min_num_params",
    "fsdp_transformer_layer_cls_to_wrap",
    "half_precision_backend",
    "include_inputs_for_metrics",
    "include_tokens_per_second",
    "jit_mode_eval",
    "logging_dir",
    "mp_parameters",
    "no_cuda",
    "past_index",
    "per_gpu_eval_batch_size",
    "per_gpu_train_batch_size",
    "push_to_hub_model_id",
    "push_to_hub_organization",
    "push_to_hub_token",
    "ray_scope",
    "save_safetensors",
    "sharded_ddp",
    "split_batches",
    "torchdynamo",
    "tp_size",
    "tpu_metrics_debug",
    "tpu_num_cores",
    "use_ipex",
    "use_legacy_prediction_loop",
    "use_mps_device",
    "xpu_backend",
};
static_assert(std::is_sorted(std::begin(kOlderHf), std::end(kOlderHf)));
static_assert(std::is_sorted(std::begin(kUnsupported), std::end(kUnsupported)));

using Json = nlohmann::json;

bool is_null_or(const Json& value, const Json& harmless) { return value.is_null() || value == harmless; }

// torch's AdamW (berth's) under its kernel names; adamw_apex_fused is apex's FusedAdam in AdamW mode, the
// same update. HF's own adamw_hf is not: epsilon inside the bias correction, decay after the update.
bool is_torch_adamw(const Json& value) {
  static const std::set<std::string> names = {"adamw_torch", "adamw_torch_fused", "adamw_torch_xla",
                                              "adamw_torch_npu_fused", "adamw_apex_fused"};
  return value.is_null() || (value.is_string() && names.count(value.get<std::string>()));
}

// An ignored argument whose non-default values change what training computes.
struct MathChangingArgument {
  std::string_view name;
  bool (*harmless)(const Json&);
  const char* what;  // what a harmful value asks for
  const char* fix;
};

const MathChangingArgument kMathChanging[] = {
    {"optim", is_torch_adamw, "an optimizer other than torch's AdamW, the only one berth has",
     "\"optim\": \"adamw_torch\" (or remove it)"},
    {"optim_args", [](const Json& v) { return is_null_or(v, ""); }, "extra optimizer arguments",
     "remove it (set adam_beta1, adam_beta2, adam_epsilon and weight_decay instead)"},
    {"optim_target_modules", [](const Json& v) { return v.is_null(); },
     "an optimizer for chosen modules (GaLore, APOLLO ...)", "remove it"},
    {"adafactor", [](const Json& v) { return is_null_or(v, false); }, "the Adafactor optimizer",
     "remove it: berth trains with AdamW"},
    {"neftune_noise_alpha", [](const Json& v) { return v.is_null(); },
     "NEFTune noise on the input embeddings", "remove it (null)"},
    {"fp16_full_eval", [](const Json& v) { return is_null_or(v, false); },
     "evaluation with the model cast to float16", "remove it: berth evaluates in the training precision"},
    {"bf16_full_eval", [](const Json& v) { return is_null_or(v, false); },
     "evaluation with the model cast to bfloat16", "remove it: berth evaluates in the training precision"},
    {"tf32", [](const Json& v) { return is_null_or(v, false); },
     "TF32 float32 matmuls on Ampere GPUs (10-bit mantissas)", "remove it: berth's float32 stays float32"},
    {"ignore_data_skip", [](const Json& v) { return is_null_or(v, false); },
     "a resumed run that starts its epoch's data again instead of skipping what was trained on",
     "remove it: berth resumes where the data left off, as HF's default"},
    {"per_gpu_train_batch_size", [](const Json& v) { return v.is_null(); },
     "a batch size under transformers 4's deprecated name, which replaces per_device_train_batch_size",
     "rename it to per_device_train_batch_size"},
    {"per_gpu_eval_batch_size", [](const Json& v) { return v.is_null(); },
     "a batch size under transformers 4's deprecated name, which replaces per_device_eval_batch_size",
     "rename it to per_device_eval_batch_size"},
    {"split_batches", [](const Json& v) { return is_null_or(v, false); },
     "batches split across the ranks (each rank gets per_device_train_batch_size / world size)",
     "remove it, and divide per_device_train_batch_size by the number of ranks yourself"},
    {"accelerator_config",
     [](const Json& v) { return !v.is_object() || is_null_or(v.value("split_batches", Json()), false); },
     "batches split across the ranks (accelerator_config.split_batches)",
     "\"split_batches\": false, and divide per_device_train_batch_size by the number of ranks yourself"},
};

}  // namespace

const std::vector<std::string>& unsupported_hf_training_arguments() {
  static const std::vector<std::string> names(std::begin(kUnsupported), std::end(kUnsupported));
  return names;
}

const std::vector<std::string>& older_hf_training_arguments() {
  static const std::vector<std::string> names(std::begin(kOlderHf), std::end(kOlderHf));
  return names;
}

bool is_unsupported_hf_training_argument(std::string_view name) {
  return std::binary_search(std::begin(kUnsupported), std::end(kUnsupported), name) ||
         std::binary_search(std::begin(kOlderHf), std::end(kOlderHf), name);
}

void check_ignored_hf_training_argument(const std::string& source, std::string_view name,
                                        const std::string& value_json) {
  const Json value = Json::parse(value_json);
  for (const MathChangingArgument& rule : kMathChanging) {
    if (rule.name != name || rule.harmless(value)) continue;
    BERTH_FAIL(source, ": \"", name, "\": ", value.dump(), " asks for ", rule.what,
               ", which berth does not implement; ignoring it would change the numbers training computes. "
               "Fix: ",
               rule.fix);
  }
}

void refuse_unsupported_hf_training_argument(std::string_view name) {
  BERTH_FAIL("training argument '", name,
             "' is one of HF's that berth does not implement. Fix: leave it out (in a JSON --args file berth "
             "ignores it with a warning)");
}

std::string ignored_hf_training_arguments_warning(const std::string& source, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return source + ": ignored " + std::to_string(names.size()) +
         " HF training argument(s) berth does not implement: " + text::join(names, ", ");
}

}  // namespace berth::train
