// The HF TrainingArguments fields berth knows of but does not implement: the list, refused on a command line
// and ignored with one warning in a JSON file.
#include "berth/train/unsupported_hf_arguments.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "berth/core/error.h"
#include "core/text.h"

namespace berth::train {
namespace {

// transformers 4.4x and 5.x TrainingArguments fields that berth does not implement
// (fields(TrainingArguments)), sorted.
constexpr std::string_view kUnsupported[] = {
    "accelerator_config",
    "activation_checkpointing",
    "activation_checkpointing_kwargs",
    "adafactor",
    "auto_find_batch_size",
    "average_tokens_across_devices",
    "batch_eval_metrics",
    "bf16_full_eval",
    "data_seed_per_worker",
    "dataloader_in_order",
    "dataloader_multiprocessing_context",
    "dataloader_num_workers",
    "dataloader_persistent_workers",
    "dataloader_pin_memory",
    "dataloader_prefetch_factor",
    "ddp_broadcast_buffers",
    "ddp_static_graph",
    "debug",
    "disable_tqdm_per_rank",
    "dispatch_batches",
    "do_eval",
    "do_predict",
    "do_train",
    "enable_jit_checkpoint",
    "eval_accumulation_steps",
    "eval_delay",
    "eval_do_concat_batches",
    "eval_on_start",
    "eval_use_gather_object",
    "fp16_backend",
    "fp16_full_eval",
    "fp16_opt_level",
    "fsdp_config",
    "fsdp_min_num_params",
    "fsdp_transformer_layer_cls_to_wrap",
    "full_determinism",
    "gradient_checkpointing",
    "gradient_checkpointing_kwargs",
    "greater_is_better_per_metric",
    "half_precision_backend",
    "hub_always_push",
    "hub_model_id",
    "hub_private_repo",
    "hub_revision",
    "hub_strategy",
    "hub_token",
    "ignore_data_skip",
    "include_for_metrics",
    "include_inputs_for_metrics",
    "include_num_input_tokens_seen",
    "include_tokens_per_second",
    "jit_mode_eval",
    "label_names",
    "label_smoothing_factor",
    "length_column_name",
    "liger_kernel_config",
    "local_rank",
    "log_level",
    "log_level_replica",
    "log_on_each_node",
    "logging_dir",
    "lr_scheduler_kwargs",
    "mp_parameters",
    "neftune_noise_alpha",
    "no_cuda",
    "optim",
    "optim_args",
    "optim_target_modules",
    "parallelism_config",
    "past_index",
    "per_gpu_eval_batch_size",
    "per_gpu_train_batch_size",
    "prediction_loss_only",
    "project",
    "push_to_hub",
    "push_to_hub_model_id",
    "push_to_hub_organization",
    "push_to_hub_token",
    "ray_scope",
    "remove_unused_columns",
    "restore_callback_states_from_checkpoint",
    "run_name",
    "save_on_each_node",
    "save_only_model",
    "save_safetensors",
    "skip_memory_metrics",
    "split_batches",
    "tf32",
    "torch_compile",
    "torch_compile_backend",
    "torch_compile_mode",
    "torch_empty_cache_steps",
    "torchdynamo",
    "tpu_metrics_debug",
    "tpu_num_cores",
    "trackio_bucket_id",
    "trackio_space_id",
    "trackio_static_space_id",
    "use_cache",
    "use_cpu",
    "use_ipex",
    "use_legacy_prediction_loop",
    "use_liger_kernel",
    "use_mps_device",
};
static_assert(std::is_sorted(std::begin(kUnsupported), std::end(kUnsupported)));

}  // namespace

const std::vector<std::string>& unsupported_hf_training_arguments() {
  static const std::vector<std::string> names(std::begin(kUnsupported), std::end(kUnsupported));
  return names;
}

bool is_unsupported_hf_training_argument(std::string_view name) {
  return std::binary_search(std::begin(kUnsupported), std::end(kUnsupported), name);
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
