// DeepSpeed configs resolved against TrainingArguments as HF's HfTrainerDeepSpeedConfig does
// (integrations/deepspeed.py): "auto" filled, every mismatch reported at once, every argument the config
// silently overrides warned about.
#include "berth/train/deepspeed_config.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/model/pretrained_config.h"
#include "core/number_text.h"
#include "core/text.h"
#include "train/written_deepspeed_config.h"

namespace berth::train {
namespace {

using detail::WrittenDeepSpeedConfig;

// HF's mismatch list.
class Mismatches {
 public:
  explicit Mismatches(std::string source) : source_(std::move(source)) {}
  void check(const std::string& key, double config_value, const std::string& argument, double argument_value,
             const std::string& fix) {
    if (config_value == argument_value) return;
    lines_.push_back("- " + key + "=" + text::shortest_number_text(config_value) + " vs " + argument + "=" +
                     text::shortest_number_text(argument_value) + " (fix: " + fix + ")");
  }
  void add(const std::string& line) { lines_.push_back("- " + line); }
  void throw_if_any() const {
    if (lines_.empty()) return;
    BERTH_FAIL(
        source_,
        ": Please correct the following DeepSpeed config values that mismatch TrainingArguments values:\n",
        text::join(lines_, "\n"),
        "\nThe easiest fix is to set these DeepSpeed config values to \"auto\" (filled from the training "
        "arguments).");
  }

 private:
  std::string source_;
  std::vector<std::string> lines_;
};

std::string read_config_text(const std::string& text_or_path, std::string& source) {
  const size_t first = text_or_path.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text_or_path[first] == '{') {
    source = "the deepspeed training argument (inline JSON)";
    return text_or_path;
  }
  source = text_or_path;
  return read_input_file(text_or_path, "--deepspeed config");
}

// DeepSpeed's batch rule among the explicit values (runtime/config.py): all three must agree, and two
// given determine the third.
void apply_batch_rule(WrittenDeepSpeedConfig& written, int64_t world_size, const std::string& source) {
  auto& train = written.train_batch_size;
  auto& micro = written.micro_batch;
  auto& accumulation = written.accumulation;
  if (train && micro && accumulation) {
    BERTH_CHECK(
        *train == *micro * *accumulation * world_size, source,
        ": train_batch_size must equal train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
        "world size, found ",
        *train, " != ", *micro, " x ", *accumulation, " x ", world_size, " = ",
        *micro * *accumulation * world_size,
        ". Fix: set one of them to \"auto\" (or remove it) and DeepSpeed's rule derives it");
  } else if (train && micro && !written.accumulation_given) {
    BERTH_CHECK(*train % (*micro * world_size) == 0, source,
                ": gradient_accumulation_steps = train_batch_size / "
                "(train_micro_batch_size_per_gpu x world size) = ",
                *train, " / (", *micro, " x ", world_size,
                ") is not a whole number. Fix: make train_batch_size a multiple of ", *micro * world_size);
    accumulation = *train / (*micro * world_size);
  } else if (train && accumulation && !written.micro_batch_given) {
    BERTH_CHECK(*train % (*accumulation * world_size) == 0, source,
                ": train_micro_batch_size_per_gpu = "
                "train_batch_size / (gradient_accumulation_steps x world size) = ",
                *train, " / (", *accumulation, " x ", world_size,
                ") is not a whole number. Fix: make train_batch_size a multiple of ",
                *accumulation * world_size);
    micro = *train / (*accumulation * world_size);
  } else if (micro && accumulation && !written.train_batch_size_given) {
    train = *micro * *accumulation * world_size;
  }
}

// The batch sizes: DeepSpeed's rule first, then HF's comparison with the arguments, which then fill them.
void resolve_batch_sizes(WrittenDeepSpeedConfig& written, const TrainingArguments& args, int64_t world_size,
                         const std::string& source, Mismatches& mismatches) {
  apply_batch_rule(written, world_size, source);
  const int64_t args_micro = args.per_device_train_batch_size;
  const int64_t args_accumulation = args.gradient_accumulation_steps;
  const int64_t args_train = args_micro * args_accumulation * world_size;
  if (written.micro_batch)
    mismatches.check("train_micro_batch_size_per_gpu", static_cast<double>(*written.micro_batch),
                     "per_device_train_batch_size", static_cast<double>(args_micro),
                     "--per_device_train_batch_size " + std::to_string(*written.micro_batch));
  if (written.accumulation)
    mismatches.check("gradient_accumulation_steps", static_cast<double>(*written.accumulation),
                     "gradient_accumulation_steps", static_cast<double>(args_accumulation),
                     "--gradient_accumulation_steps " + std::to_string(*written.accumulation));
  if (written.train_batch_size)
    mismatches.check(
        "train_batch_size", static_cast<double>(*written.train_batch_size),
        "train_batch_size (calculated: per_device_train_batch_size x gradient_accumulation_steps x " +
            std::to_string(world_size) + " ranks)",
        static_cast<double>(args_train), "\"auto\"");
  DeepSpeedConfig& config = written.config;
  config.train_batch_size = args_train;
  config.train_micro_batch_size_per_gpu = args_micro;
  config.gradient_accumulation_steps = args_accumulation;
}

void resolve_gradient_clipping(WrittenDeepSpeedConfig& written, const TrainingArguments& args,
                               Mismatches& mismatches) {
  if (written.gradient_clipping)
    mismatches.check("gradient_clipping", *written.gradient_clipping, "max_grad_norm", args.max_grad_norm,
                     "--max_grad_norm " + text::shortest_number_text(*written.gradient_clipping));
  written.config.gradient_clipping = written.gradient_clipping
                                         ? *written.gradient_clipping
                                         : (written.gradient_clipping_auto ? args.max_grad_norm : 0.0);
}

// Precision: "auto" follows the arguments. An explicit "enabled": true turns the precision on (the config is
// where DeepSpeed users choose it: the seed's config enables fp16 with no --fp16 beside it); what cannot
// both hold is a mismatch: the config disabling what a flag asked for, or enabling the other precision.
void resolve_precision(WrittenDeepSpeedConfig& written, const TrainingArguments& args,
                       Mismatches& mismatches) {
  const auto& precision = written.precision;
  const bool fp16 = precision.fp16.value_or(args.fp16);  // unset: absent or "auto"
  const bool bf16 = precision.bf16.value_or(args.bf16);
  if (precision.fp16 && !*precision.fp16 && args.fp16)
    mismatches.add("fp16.enabled=false vs fp16=true (fix: drop --fp16, or \"enabled\": \"auto\")");
  if (precision.bf16 && !*precision.bf16 && args.bf16)
    mismatches.add("bf16.enabled=false vs bf16=true (fix: drop --bf16, or \"enabled\": \"auto\")");
  if (precision.fp16.value_or(false) && args.bf16)
    mismatches.add(
        "fp16.enabled=true vs bf16=true (fix: drop --bf16, or set \"fp16\": {\"enabled\": false})");
  if (precision.bf16.value_or(false) && args.fp16)
    mismatches.add(
        "bf16.enabled=true vs fp16=true (fix: drop --fp16, or set \"bf16\": {\"enabled\": false})");
  written.config.precision.precision = fp16 ? Precision::fp16 : bf16 ? Precision::bf16 : Precision::fp32;
}

void resolve_optimizer(WrittenDeepSpeedConfig& written, const TrainingArguments& args,
                       Mismatches& mismatches) {
  if (!written.config.optimizer) return;
  const auto check = [&](const std::optional<double>& value, const char* key, const char* argument,
                         double argument_value) {
    if (value)
      mismatches.check(key, *value, argument, argument_value,
                       std::string("--") + argument + " " + text::shortest_number_text(*value));
  };
  check(written.lr, "optimizer.params.lr", "learning_rate", args.learning_rate);
  check(written.beta1, "optimizer.params.betas[0]", "adam_beta1", args.adam_beta1);
  check(written.beta2, "optimizer.params.betas[1]", "adam_beta2", args.adam_beta2);
  check(written.eps, "optimizer.params.eps", "adam_epsilon", args.adam_epsilon);
  check(written.weight_decay, "optimizer.params.weight_decay", "weight_decay", args.weight_decay);
  DeepSpeedOptimizer& optimizer = *written.config.optimizer;
  optimizer.lr = args.learning_rate;
  optimizer.beta1 = args.adam_beta1;
  optimizer.beta2 = args.adam_beta2;
  optimizer.eps = args.adam_epsilon;
  optimizer.weight_decay = args.weight_decay;
}

// HF's fill_match of an explicit warmup_num_steps against the run's warmup, clamped as it fills "auto".
void check_warmup_num_steps(int64_t written, int64_t warmup, Mismatches& mismatches) {
  mismatches.check("scheduler.params.warmup_num_steps", static_cast<double>(written),
                   "warmup_steps (max(1, the run's warmup steps))", static_cast<double>(warmup),
                   "--warmup_steps " + std::to_string(written) + ", or \"auto\"");
}

void resolve_scheduler(WrittenDeepSpeedConfig& written, const TrainingArguments& args,
                       Mismatches& mismatches) {
  if (!written.config.scheduler) return;
  optim::SchedulerOptions& options = written.config.scheduler->options;
  if (written.warmup_max_lr)
    mismatches.check("scheduler.params.warmup_max_lr", *written.warmup_max_lr, "learning_rate",
                     args.learning_rate,
                     "--learning_rate " + text::shortest_number_text(*written.warmup_max_lr));
  options.warmup_max_lr = args.learning_rate;
  options.warmup_min_lr = written.warmup_min_lr.value_or(0.0);  // HF's fill_only: "auto" is 0
  // HF fills an "auto" warmup from the arguments at train start; an absent one is DeepSpeed's 1000.
  if (written.config.scheduler->warmup_num_steps_pending) options.warmup_steps = 0;
  // A warmup in steps (or none) is known now: its mismatch joins the others in one error, as HF lists them.
  // A ratio waits for the run's total (finalize_deepspeed_config).
  if (written.warmup_num_steps && (args.warmup_steps > 0 || args.warmup_ratio <= 0))
    check_warmup_num_steps(*written.warmup_num_steps, std::max<int64_t>(1, args.warmup_steps), mismatches);
}

// The warmup the arguments ask for, when the scheduler block has no warmup_num_steps: DeepSpeed's default of
// 1000 wins, as in HF (a number written there that disagrees is a mismatch at train start).
std::optional<std::string> overridden_warmup(const WrittenDeepSpeedConfig& written,
                                             const TrainingArguments& args, const std::string& source) {
  const DeepSpeedScheduler& scheduler = *written.config.scheduler;
  if ((args.warmup_steps <= 0 && args.warmup_ratio <= 0) || scheduler.warmup_num_steps_pending ||
      written.warmup_num_steps)
    return std::nullopt;
  const std::string asked = args.warmup_steps > 0
                                ? "warmup_steps=" + std::to_string(args.warmup_steps)
                                : "warmup_ratio=" + text::shortest_number_text(args.warmup_ratio);
  return source + ": " + asked + " is not applied: the DeepSpeed config's scheduler (" + scheduler.type +
         ") has no \"warmup_num_steps\", so DeepSpeed's default of 1000 warmup steps wins, as in HF. Fix: "
         "\"warmup_num_steps\": \"auto\" in the config's scheduler params to warm up as the training "
         "arguments ask";
}

// One line per TrainingArguments value the config replaces without a mismatch: an absent key whose
// DeepSpeed default wins (as in HF with DeepSpeed), or the config's scheduler taking over from the
// arguments' schedule. Arguments at their defaults are named only where the replacement changes training
// (max_grad_norm's default clipping); a default lr_scheduler_type or warmup is DeepSpeed's to replace.
std::vector<std::string> overridden_arguments(const WrittenDeepSpeedConfig& written,
                                              const TrainingArguments& args, const std::string& source) {
  std::vector<std::string> lines;
  if (!written.gradient_clipping && !written.gradient_clipping_auto && args.max_grad_norm > 0)
    lines.push_back(
        source + ": max_grad_norm=" + text::shortest_number_text(args.max_grad_norm) +
        " is not applied: the DeepSpeed config has no \"gradient_clipping\", so DeepSpeed's default "
        "0 (no clipping) wins, as in HF. Fix: \"gradient_clipping\": \"auto\" in the config to clip "
        "at max_grad_norm, or --max_grad_norm 0 to train without clipping");
  if (!written.config.scheduler) return lines;
  if (args.lr_scheduler_type != TrainingArguments{}.lr_scheduler_type)
    lines.push_back(
        source + ": lr_scheduler_type=" + args.lr_scheduler_type +
        " is not applied: the DeepSpeed config's scheduler (" + written.config.scheduler->type +
        ") sets the learning-rate schedule, as in HF. Fix: remove the config's \"scheduler\" block "
        "to schedule with lr_scheduler_type, or leave lr_scheduler_type at its default");
  if (auto warmup = overridden_warmup(written, args, source)) lines.push_back(*warmup);
  return lines;
}

// HF's hidden size of one config object (JSON): hidden_size or an attribute_map alias, else
// max(hidden_sizes).
std::optional<int64_t> hidden_size_of(const nlohmann::json& config) {
  if (!config.is_object()) return std::nullopt;
  // PretrainedConfig.attribute_map: GPT-2 and its kin call it n_embd, DistilBERT dim, T5 and BART d_model.
  for (const char* key : {"hidden_size", "n_embd", "dim", "d_model"}) {
    auto it = config.find(key);
    if (it != config.end() && it->is_number_integer()) return it->get<int64_t>();
  }
  auto sizes = config.find("hidden_sizes");
  if (sizes != config.end() && sizes->is_array() && !sizes->empty()) {
    int64_t largest = 0;
    for (const auto& size : *sizes)
      if (size.is_number_integer()) largest = std::max(largest, size.get<int64_t>());
    if (largest > 0) return largest;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> model_hidden_size(const PretrainedConfig& config) {
  const nlohmann::json root = nlohmann::json::parse(config.to_json_text());
  if (auto size = hidden_size_of(root)) return size;
  if (auto text_config = root.find("text_config"); text_config != root.end())
    return hidden_size_of(*text_config);
  return std::nullopt;
}

void fill_hidden_size_auto(DeepSpeedConfig& config, std::optional<int64_t> hidden_size) {
  std::vector<std::string>& keys = config.hidden_size_auto_keys;
  if (keys.empty()) return;
  BERTH_CHECK(hidden_size && *hidden_size > 0,
              "DeepSpeed config: the model's hidden size is not known (its config has neither `hidden_size` "
              "nor `hidden_sizes`, or the run plan was resolved without one), so the \"auto\" values of ",
              text::join(keys, ", "),
              " cannot be filled (HF fills them from the hidden size). Fix: replace \"auto\" in these keys "
              "with a whole number of your choice");
  const int64_t h = *hidden_size;
  const auto is_auto = [&](const char* key) {
    return std::find(keys.begin(), keys.end(), std::string("zero_optimization.") + key) != keys.end();
  };
  dist::ZeroOptions& zero = config.zero;
  if (is_auto("reduce_bucket_size")) zero.reduce_bucket_size = h * h;
  if (zero.stage == 3) {
    // Python's int(0.9 * h * h): the product left to right in doubles, truncated.
    if (is_auto("stage3_prefetch_bucket_size"))
      zero.stage3_prefetch_bucket_size =
          static_cast<int64_t>(0.9 * static_cast<double>(h) * static_cast<double>(h));
    if (is_auto("stage3_param_persistence_threshold")) zero.stage3_param_persistence_threshold = 10 * h;
  }
  keys.clear();
}

DeepSpeedConfig resolve_deepspeed_config(const std::string& config_text_or_path,
                                         const TrainingArguments& args, int64_t world_size,
                                         std::vector<std::string>* warnings) {
  BERTH_CHECK(world_size >= 1, "resolve_deepspeed_config: world_size must be >= 1, found ", world_size,
              ". Fix: pass the number of ranks");
  std::string source;
  const std::string text = read_config_text(config_text_or_path, source);
  WrittenDeepSpeedConfig written = detail::parse_written_deepspeed_config(text, source, warnings);
  Mismatches mismatches(source);
  resolve_batch_sizes(written, args, world_size, source, mismatches);
  resolve_gradient_clipping(written, args, mismatches);
  resolve_precision(written, args, mismatches);
  resolve_optimizer(written, args, mismatches);
  resolve_scheduler(written, args, mismatches);
  mismatches.throw_if_any();
  if (warnings)
    for (std::string& line : overridden_arguments(written, args, source))
      warnings->push_back(std::move(line));
  return written.config;
}

void finalize_deepspeed_config(DeepSpeedConfig& config, const TrainingArguments& args, int64_t total_steps) {
  if (!config.scheduler) return;
  DeepSpeedScheduler& scheduler = *config.scheduler;
  optim::SchedulerOptions& options = scheduler.options;
  Mismatches mismatches("DeepSpeed config");
  if (scheduler.total_num_steps_pending) {
    options.total_steps = total_steps;
    scheduler.total_num_steps_pending = false;
  } else if (scheduler.total_num_steps_written) {
    mismatches.check("scheduler.params.total_num_steps", static_cast<double>(options.total_steps),
                     "num_training_steps (calculated)", static_cast<double>(total_steps), "\"auto\"");
  }
  // transformers 5.24 clamps the filled value to 1: deepspeed >= 0.19.6 refuses 0 warmup steps.
  const int64_t warmup = std::max<int64_t>(1, args.resolved_warmup_steps(total_steps));
  if (scheduler.warmup_num_steps_pending) {
    options.warmup_steps = warmup;
    scheduler.warmup_num_steps_pending = false;
  } else if (scheduler.warmup_num_steps_written) {
    check_warmup_num_steps(options.warmup_steps, warmup, mismatches);
  }
  mismatches.throw_if_any();
}

}  // namespace berth::train
