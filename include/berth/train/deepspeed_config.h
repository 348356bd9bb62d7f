// DeepSpeed JSON configs (HF's --deepspeed) read verbatim, "auto" filled from TrainingArguments as HF's
// HfTrainerDeepSpeedConfig does, every disagreement with TrainingArguments reported at once and every
// argument the config silently overrides warned about.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/dist/zero_options.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/train/precision_options.h"
#include "berth/train/training_arguments.h"

namespace berth {
class PretrainedConfig;
}

namespace berth::train {

// The "optimizer" block: DeepSpeed's Adam or AdamW. DeepSpeed's "Adam" defaults to adam_w_mode=true, i.e.
// decoupled weight decay (AdamW); berth implements only that mode, so adam_w_mode=false is an error.
struct DeepSpeedOptimizer {
  std::string type;  // as written: "Adam", "AdamW" (any case)
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
};

// The "scheduler" block. options.warmup_steps is warmup_num_steps and options.total_steps total_num_steps;
// either may be "auto", which HF fills only once the run's total optimizer steps are known (see
// finalize_deepspeed_config): until then the *_pending flags are set.
struct DeepSpeedScheduler {
  std::string type;  // WarmupLR, WarmupDecayLR or WarmupCosineLR
  optim::SchedulerOptions options;
  bool warmup_num_steps_pending = false;  // "auto": args' warmup steps of the run (absent: DeepSpeed's 1000)
  bool total_num_steps_pending = false;   // "auto" (or absent, which DeepSpeed would refuse): the run's total
  // A number written for the key: HF's fill_match compares it with the run's value at train start.
  bool warmup_num_steps_written = false;
  bool total_num_steps_written = false;
};

// A DeepSpeed config as parsed and then resolved against TrainingArguments: no "auto" remains except the
// scheduler's pending step counts.
struct DeepSpeedConfig {
  int64_t train_batch_size = 0;
  int64_t train_micro_batch_size_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
  std::optional<DeepSpeedOptimizer> optimizer;  // absent: the Trainer's own AdamW from TrainingArguments
  std::optional<DeepSpeedScheduler> scheduler;  // absent: the Trainer's own lr_scheduler_type
  // DeepSpeed's gradient_clipping: 0 (its default when the key is absent) means no clipping, also when
  // TrainingArguments.max_grad_norm is set (as in HF with DeepSpeed, where DeepSpeed clips).
  double gradient_clipping = 0;
  PrecisionOptions precision;
  dist::ZeroOptions zero;
  int64_t steps_per_print = 10;
  std::vector<std::string> unknown_keys;  // dotted paths berth does not read ("wall_clock_breakdown", ...)
  // zero_optimization keys written "auto" that HF fills from the model's hidden size
  // (fill_hidden_size_auto): reduce_bucket_size, stage3_prefetch_bucket_size,
  // stage3_param_persistence_threshold, as dotted paths. Until filled they hold DeepSpeed's defaults.
  std::vector<std::string> hidden_size_auto_keys;
};

// Parses `json_text` (`source_name` names it in messages) without TrainingArguments: "auto" batch sizes and
// hyperparameters are left 0 (batch sizes) or at the block's defaults, to be filled by resolve. Checks
// types, ranges and what berth supports: zero stage 0-3, offload device cpu|none (nvme refused),
// offload_param only with stage 3, fp16 and bf16 not both, optimizer Adam/AdamW. Numbers written 2e8 are
// integers where an integer is meant; a fractional value there is an error. Deprecation and unknown-key lines
// go to *warnings (when given).
DeepSpeedConfig parse_deepspeed_config(const std::string& json_text, const std::string& source_name,
                                       std::vector<std::string>* warnings = nullptr);

// HF's trainer_config_process plus DeepSpeed's batch rule. `config_text_or_path` is a file path, or the JSON
// text itself when it starts with '{' (HF's inline dict). Fills "auto" (and absent batch sizes) from
// `args` and `world_size`: train_batch_size = per_device_train_batch_size x gradient_accumulation_steps x
// world, optimizer lr/betas/eps/weight_decay, scheduler warmup_max_lr (= learning_rate) and warmup_min_lr
// (= 0), gradient_clipping (= max_grad_norm), fp16/bf16 enabled (= args.fp16/bf16). Of the three batch
// sizes, two given determine the third; three given must satisfy train = micro x accumulation x world
// (else an error showing the arithmetic). Every explicit value that disagrees with `args` is listed in ONE
// berth::Error ("Please correct the following DeepSpeed config values that mismatch TrainingArguments
// values", key, config value, argument value, fix), including an explicit warmup_num_steps other than
// max(1, args.warmup_steps) when the warmup is given in steps or not at all (a ratio is checked by
// finalize_deepspeed_config). Unknown keys: one line in *warnings. So is each argument the config silently
// overrides: max_grad_norm > 0 with no "gradient_clipping" (DeepSpeed's 0 wins, as in HF); with a
// "scheduler" block, an lr_scheduler_type other than linear, and warmup_steps/warmup_ratio when
// "warmup_num_steps" is absent (DeepSpeed's 1000 wins).
DeepSpeedConfig resolve_deepspeed_config(const std::string& config_text_or_path,
                                         const TrainingArguments& args, int64_t world_size,
                                         std::vector<std::string>* warnings = nullptr);

// The hidden size HF's trainer_config_finalize reads from a model's config: "hidden_size" (or the name a
// family's attribute_map gives it: GPT-2's "n_embd", DistilBERT's "dim", T5's "d_model"), else the largest of
// "hidden_sizes", else the same in "text_config". nullopt when the config has none of them.
std::optional<int64_t> model_hidden_size(const PretrainedConfig& config);

// HF's trainer_config_finalize for the zero_optimization keys written "auto": reduce_bucket_size =
// hidden_size^2 and, at stage 3 only, stage3_prefetch_bucket_size = int(0.9 * hidden_size^2) and
// stage3_param_persistence_threshold = 10 * hidden_size (below stage 3 they keep DeepSpeed's defaults, which
// nothing reads). No-op without such keys; with them and no `hidden_size`, a berth::Error naming the keys.
void fill_hidden_size_auto(DeepSpeedConfig& config, std::optional<int64_t> hidden_size);

// HF's trainer_config_finalize, at train start once `total_steps` (optimizer steps of the run) is known:
// fills the scheduler's pending total_num_steps and warmup_num_steps, the latter as
// max(1, args.resolved_warmup_steps) (transformers 5.24's clamp: DeepSpeed refuses 0 warmup steps, so a run
// without warmup still trains), and checks explicit ones against those same values (one berth::Error
// listing mismatches, as HF's fill_match). No-op without a scheduler.
void finalize_deepspeed_config(DeepSpeedConfig& config, const TrainingArguments& args, int64_t total_steps);

}  // namespace berth::train
