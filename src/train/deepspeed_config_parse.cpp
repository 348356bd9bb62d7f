// DeepSpeed JSON configs read and checked (deepspeed/runtime/config.py, zero/config.py semantics), before
// TrainingArguments fill their "auto" values.
#include "berth/train/deepspeed_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "berth/core/error.h"
#include "core/number_text.h"
#include "core/text.h"
#include "train/written_deepspeed_config.h"

namespace berth::train {
namespace detail {
namespace {

using Json = nlohmann::json;

bool is_auto(const Json& value) { return value.is_string() && value.get<std::string>() == "auto"; }

// Reads one block of the config, remembering which keys were read so the rest can be reported as unknown.
class Block {
 public:
  Block(const Json& node, std::string path, const std::string& source)
      : node_(node), path_(std::move(path)), source_(source) {
    BERTH_CHECK(node_.is_object(), source_, ": \"", path_, "\" must be a JSON object, found ", node_.dump(),
                ". Fix: e.g. \"", path_, "\": {\"enabled\": true}");
  }

  const Json* find(const std::string& key) {
    read_.insert(key);
    auto it = node_.find(key);
    return it == node_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string where(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  [[noreturn]] void bad(const std::string& key, const char* expected, const Json& found,
                        const std::string& example) const {
    BERTH_FAIL(source_, ": \"", where(key), "\" must be ", expected, ", found ", found.dump(),
               ". Fix: e.g. \"", key, "\": ", example);
  }

  std::optional<bool> boolean(const std::string& key, bool allow_auto = false) {
    const Json* value = find(key);
    if (!value || (allow_auto && is_auto(*value))) return std::nullopt;
    if (!value->is_boolean())
      bad(key, allow_auto ? "true, false or \"auto\"" : "true or false", *value, "true");
    return value->get<bool>();
  }
  // An integer count: 2e8 and 200000000.0 are 200000000; a fractional value is an error.
  std::optional<int64_t> integer(const std::string& key, bool allow_auto = false) {
    const Json* value = find(key);
    if (!value || (allow_auto && is_auto(*value))) return std::nullopt;
    if (value->is_number_integer()) return value->get<int64_t>();
    if (value->is_number_float()) {
      const double number = value->get<double>();
      if (std::floor(number) == number && std::fabs(number) < 9e18) return static_cast<int64_t>(number);
      BERTH_FAIL(source_, ": \"", where(key), "\" must be a whole number, found ", value->dump(),
                 ". Fix: e.g. \"", key, "\": ", text::shortest_number_text(std::floor(number)));
    }
    bad(key, allow_auto ? "a whole number or \"auto\"" : "a whole number", *value, "8");
  }
  std::optional<double> number(const std::string& key, bool allow_auto = false) {
    const Json* value = find(key);
    if (!value || (allow_auto && is_auto(*value))) return std::nullopt;
    if (!value->is_number()) bad(key, allow_auto ? "a number or \"auto\"" : "a number", *value, "0.01");
    return value->get<double>();
  }
  std::optional<std::string> string(const std::string& key) {
    const Json* value = find(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) bad(key, "a string", *value, "\"cpu\"");
    return value->get<std::string>();
  }
  bool has_auto(const std::string& key) {
    const Json* value = find(key);
    return value && is_auto(*value);
  }

  void collect_unknown(std::vector<std::string>& out) const {
    for (const auto& [key, value] : node_.items())
      if (!read_.count(key)) out.push_back(where(key));
  }

 private:
  const Json& node_;
  std::string path_;
  const std::string& source_;
  std::set<std::string> read_;
};

void parse_offload(Block& parent, const std::string& key, dist::OffloadOptions& offload,
                   const std::string& source, std::vector<std::string>& unknown) {
  const Json* node = parent.find(key);
  if (!node) return;
  Block block(*node, parent.where(key), source);
  if (auto device = block.string("device")) {
    const std::string name = text::to_lower(*device);
    BERTH_CHECK(
        name != "nvme", source, ": \"", block.where("device"),
        "\" is \"nvme\", which berth does not support (no NVMe offload engine). Fix: \"device\": \"cpu\" "
        "(host memory) or \"none\"");
    BERTH_CHECK(name == "cpu" || name == "none", source, ": \"", block.where("device"),
                "\" must be \"cpu\" or \"none\", found \"", *device, "\". Fix: \"device\": \"cpu\"");
    offload.device = name;
  }
  if (auto pin = block.boolean("pin_memory")) offload.pin_memory = *pin;
  block.collect_unknown(unknown);
}

void parse_zero(const Json& node, const std::string& source, dist::ZeroOptions& zero,
                std::vector<std::string>& auto_keys, std::vector<std::string>& unknown,
                std::vector<std::string>* warnings) {
  Block block(node, "zero_optimization", source);
  if (auto stage = block.integer("stage")) {
    BERTH_CHECK(*stage >= 0 && *stage <= 3, source,
                ": \"zero_optimization.stage\" must be 0, 1, 2 or 3, found ", *stage,
                ". Fix: e.g. \"stage\": 1 (optimizer states sharded)");
    zero.stage = static_cast<int>(*stage);
  }
  // HF fills "auto" in the three hidden-size keys once the model is known (fill_hidden_size_auto).
  const auto non_negative = [&](const char* key, int64_t& into, bool allow_auto = false) {
    if (allow_auto && block.has_auto(key)) {
      auto_keys.push_back(block.where(key));
      return;
    }
    if (auto value = block.integer(key, allow_auto)) {
      BERTH_CHECK(*value >= 0, source, ": \"zero_optimization.", key, "\" must be >= 0, found ", *value,
                  ". Fix: e.g. \"", key, "\": 200000000");
      into = *value;
    }
  };
  non_negative("reduce_bucket_size", zero.reduce_bucket_size, true);
  non_negative("allgather_bucket_size", zero.allgather_bucket_size);
  non_negative("stage3_prefetch_bucket_size", zero.stage3_prefetch_bucket_size, true);
  non_negative("stage3_param_persistence_threshold", zero.stage3_param_persistence_threshold, true);
  if (auto value = block.boolean("allgather_partitions")) zero.allgather_partitions = *value;
  if (auto value = block.boolean("reduce_scatter")) zero.reduce_scatter = *value;
  if (auto value = block.boolean("overlap_comm")) zero.overlap_comm = *value;
  if (auto value = block.boolean("contiguous_gradients")) zero.contiguous_gradients = *value;
  parse_offload(block, "offload_optimizer", zero.offload_optimizer, source, unknown);
  parse_offload(block, "offload_param", zero.offload_param, source, unknown);
  // DeepSpeed's deprecated spellings (zero/config.py maps them the same way).
  std::vector<std::string> deprecated;
  if (auto value = block.boolean("cpu_offload")) {
    deprecated.push_back("cpu_offload -> offload_optimizer {\"device\": \"cpu\"}");
    if (*value) zero.offload_optimizer.device = "cpu";
  }
  if (auto value = block.boolean("cpu_offload_params")) {
    deprecated.push_back("cpu_offload_params -> offload_param {\"device\": \"cpu\"}");
    if (*value) zero.offload_param.device = "cpu";
  }
  if (auto value = block.boolean("cpu_offload_use_pin_memory")) {
    deprecated.push_back(
        "cpu_offload_use_pin_memory -> offload_optimizer/offload_param {\"pin_memory\": true}");
    zero.offload_optimizer.pin_memory = zero.offload_param.pin_memory = *value;
  }
  if (!deprecated.empty() && warnings)
    warnings->push_back(source + ": zero_optimization uses DeepSpeed's deprecated " +
                        text::join(deprecated, "; ") + " (applied as written after the arrow)");
  BERTH_CHECK(
      !zero.offload_param.enabled() || zero.stage == 3, source,
      ": \"zero_optimization.offload_param\" needs stage 3 (only stage 3 partitions parameters), found "
      "stage ",
      zero.stage, ". Fix: \"stage\": 3, or remove offload_param");
  BERTH_CHECK(!zero.offload_optimizer.enabled() || zero.stage >= 1, source,
              ": \"zero_optimization.offload_optimizer\" needs stage 1, 2 or 3 (the offloaded optimizer is a "
              "ZeRO one), found stage 0. Fix: e.g. \"stage\": 1");
  block.collect_unknown(unknown);
}

PrecisionFlags parse_precision(Block& root, const std::string& source, LossScaleOptions& loss_scale,
                               std::vector<std::string>& unknown) {
  PrecisionFlags flags;
  if (const Json* node = root.find("fp16")) {
    Block block(*node, "fp16", source);
    flags.fp16_auto = block.has_auto("enabled");
    flags.fp16 = block.boolean("enabled", true);
    if (auto value = block.number("loss_scale")) {
      BERTH_CHECK(*value >= 0, source, ": \"fp16.loss_scale\" must be >= 0 (0: dynamic), found ",
                  text::shortest_number_text(*value), ". Fix: \"loss_scale\": 0");
      loss_scale.loss_scale = *value;
    }
    if (auto value = block.integer("initial_scale_power")) {
      BERTH_CHECK(*value >= 0 && *value <= 63, source,
                  ": \"fp16.initial_scale_power\" must be in [0, 63], found ", *value,
                  ". Fix: \"initial_scale_power\": 16");
      loss_scale.initial_scale_power = static_cast<int>(*value);
    }
    if (auto value = block.integer("loss_scale_window")) {
      BERTH_CHECK(*value >= 1, source, ": \"fp16.loss_scale_window\" must be >= 1, found ", *value,
                  ". Fix: \"loss_scale_window\": 1000");
      loss_scale.loss_scale_window = *value;
    }
    if (auto value = block.integer("hysteresis")) {
      BERTH_CHECK(*value >= 1, source, ": \"fp16.hysteresis\" must be >= 1, found ", *value,
                  ". Fix: \"hysteresis\": 2");
      loss_scale.hysteresis = static_cast<int>(*value);
    }
    if (auto value = block.boolean("consecutive_hysteresis")) loss_scale.consecutive_hysteresis = *value;
    if (auto value = block.number("min_loss_scale")) {
      BERTH_CHECK(*value > 0, source, ": \"fp16.min_loss_scale\" must be > 0, found ",
                  text::shortest_number_text(*value), ". Fix: \"min_loss_scale\": 1");
      loss_scale.min_loss_scale = *value;
    }
    block.collect_unknown(unknown);
  }
  // DeepSpeed reads "bf16" or its older name "bfloat16".
  for (const char* key : {"bf16", "bfloat16"}) {
    if (const Json* node = root.find(key)) {
      Block block(*node, key, source);
      flags.bf16_auto = block.has_auto("enabled");
      flags.bf16 = block.boolean("enabled", true);
      block.collect_unknown(unknown);
    }
  }
  BERTH_CHECK(
      !(flags.fp16.value_or(false) && flags.bf16.value_or(false)), source,
      ": fp16 and bf16 are both enabled; one run trains in one precision. Fix: set \"enabled\": false in "
      "one of the two blocks");
  return flags;
}

// The three batch sizes, gradient_clipping and steps_per_print at the top level.
void parse_top_level(Block& block, const std::string& source, WrittenDeepSpeedConfig& written) {
  const auto batch = [&](const char* key, std::optional<int64_t>& into, bool& given) {
    given = block.find(key) != nullptr;
    into = block.integer(key, true);
    if (into)
      BERTH_CHECK(*into >= 1, source, ": \"", key, "\" must be >= 1, found ", *into, ". Fix: e.g. \"", key,
                  "\": \"auto\" (filled from the training arguments)");
  };
  batch("train_batch_size", written.train_batch_size, written.train_batch_size_given);
  batch("train_micro_batch_size_per_gpu", written.micro_batch, written.micro_batch_given);
  batch("gradient_accumulation_steps", written.accumulation, written.accumulation_given);

  written.gradient_clipping_auto = block.has_auto("gradient_clipping");
  written.gradient_clipping = block.number("gradient_clipping", true);
  if (written.gradient_clipping)
    BERTH_CHECK(
        *written.gradient_clipping >= 0, source, ": \"gradient_clipping\" must be >= 0 (0: none), found ",
        text::shortest_number_text(*written.gradient_clipping), ". Fix: e.g. \"gradient_clipping\": 1.0");
  if (auto value = block.integer("steps_per_print")) {
    BERTH_CHECK(*value >= 1, source, ": \"steps_per_print\" must be >= 1, found ", *value,
                ". Fix: e.g. \"steps_per_print\": 10");
    written.config.steps_per_print = *value;
  }
}

void parse_optimizer(const Json& node, const std::string& source, WrittenDeepSpeedConfig& written,
                     std::vector<std::string>& unknown) {
  Block optimizer(node, "optimizer", source);
  const std::string type = optimizer.string("type").value_or("");
  const std::string name = text::to_lower(type);
  BERTH_CHECK(
      name == "adam" || name == "adamw", source, ": \"optimizer.type\" \"", type,
      "\" is not supported by berth, which implements Adam and AdamW (DeepSpeed's Adam with adam_w_mode "
      "true is AdamW). Fix: \"type\": \"AdamW\", or remove the optimizer block to use the training "
      "arguments' AdamW");
  DeepSpeedOptimizer spec;
  spec.type = type;
  if (const Json* params_node = optimizer.find("params")) {
    Block params(*params_node, "optimizer.params", source);
    written.lr = params.number("lr", true);
    if (const Json* betas = params.find("betas"); betas && !is_auto(*betas)) {
      BERTH_CHECK(
          betas->is_array() && betas->size() == 2 && (*betas)[0].is_number() && (*betas)[1].is_number(),
          source, ": \"optimizer.params.betas\" must be two numbers or \"auto\", found ", betas->dump(),
          ". Fix: e.g. \"betas\": [0.9, 0.999]");
      written.beta1 = (*betas)[0].get<double>();
      written.beta2 = (*betas)[1].get<double>();
    }
    written.eps = params.number("eps", true);
    written.weight_decay = params.number("weight_decay", true);
    if (auto w_mode = params.boolean("adam_w_mode"))
      BERTH_CHECK(
          *w_mode, source,
          ": \"optimizer.params.adam_w_mode\" false asks for Adam with L2 regularisation in the "
          "gradient, which berth does not implement. Fix: \"adam_w_mode\": true (DeepSpeed's default), "
          "i.e. AdamW");
    params.boolean("torch_adam");  // which kernel DeepSpeed uses; the arithmetic is the same
    if (auto bias_correction = params.boolean("bias_correction"))
      BERTH_CHECK(*bias_correction, source,
                  ": \"optimizer.params.bias_correction\" false turns off Adam's bias correction, which "
                  "berth's AdamW always applies (as torch's AdamW does). Fix: \"bias_correction\": true "
                  "(DeepSpeed's default), or remove it");
    if (auto amsgrad = params.boolean("amsgrad"))
      BERTH_CHECK(!*amsgrad, source,
                  ": \"optimizer.params.amsgrad\" true asks for AMSGrad, which berth's AdamW does not "
                  "implement. Fix: \"amsgrad\": false (DeepSpeed's default), or remove it");
    params.collect_unknown(unknown);
  }
  optimizer.collect_unknown(unknown);
  written.config.optimizer = spec;
}

// The scheduler's "params" block into `spec` (its options and pending flags) and `written`.
void parse_scheduler_params(const Json& node, const std::string& source, DeepSpeedScheduler& spec,
                            WrittenDeepSpeedConfig& written, std::vector<std::string>& unknown) {
  Block params(node, "scheduler.params", source);
  written.warmup_min_lr = params.number("warmup_min_lr", true);
  written.warmup_max_lr = params.number("warmup_max_lr", true);
  spec.warmup_num_steps_pending = params.has_auto("warmup_num_steps");
  written.warmup_num_steps = params.integer("warmup_num_steps", true);
  spec.total_num_steps_pending = params.has_auto("total_num_steps");
  written.total_num_steps = params.integer("total_num_steps", true);
  if (auto warmup_type = params.string("warmup_type")) {
    BERTH_CHECK(*warmup_type == "log" || *warmup_type == "linear", source,
                ": \"scheduler.params.warmup_type\" must be \"log\" or \"linear\", found \"", *warmup_type,
                "\". Fix: \"warmup_type\": \"linear\"");
    spec.options.warmup_type = *warmup_type;
  }
  if (auto value = params.number("warmup_min_ratio")) spec.options.warmup_min_ratio = *value;
  if (auto value = params.number("cos_min_ratio")) spec.options.cos_min_ratio = *value;
  params.collect_unknown(unknown);
}

void parse_scheduler(const Json& node, const std::string& source, WrittenDeepSpeedConfig& written,
                     std::vector<std::string>& unknown) {
  Block scheduler(node, "scheduler", source);
  const std::string type = scheduler.string("type").value_or("");
  BERTH_CHECK(
      type == "WarmupLR" || type == "WarmupDecayLR" || type == "WarmupCosineLR", source,
      ": \"scheduler.type\" \"", type,
      "\" is not supported by berth, which implements WarmupLR, WarmupDecayLR and WarmupCosineLR. Fix: "
      "one of these, or remove the scheduler block to use --lr_scheduler_type");
  DeepSpeedScheduler spec;
  spec.type = type;
  spec.options.type = optim::parse_scheduler_type(type);
  // DeepSpeed's defaults (lr_schedules.py).
  spec.options.warmup_steps = 1000;
  spec.options.warmup_min_lr = 0;
  if (const Json* params_node = scheduler.find("params"))
    parse_scheduler_params(*params_node, source, spec, written, unknown);
  if (written.warmup_num_steps) {
    BERTH_CHECK(*written.warmup_num_steps >= 0, source,
                ": \"scheduler.params.warmup_num_steps\" must be >= 0, found ", *written.warmup_num_steps,
                ". Fix: e.g. \"warmup_num_steps\": \"auto\"");
    spec.options.warmup_steps = *written.warmup_num_steps;
    spec.warmup_num_steps_written = true;
  }
  if (written.total_num_steps) {
    BERTH_CHECK(*written.total_num_steps >= 1, source,
                ": \"scheduler.params.total_num_steps\" must be >= 1, found ", *written.total_num_steps,
                ". Fix: e.g. \"total_num_steps\": \"auto\"");
    spec.options.total_steps = *written.total_num_steps;
    spec.total_num_steps_written = true;
  }
  // WarmupLR needs no total; the others do and, without one, would never decay: "auto" in effect.
  if (type != "WarmupLR" && !written.total_num_steps) spec.total_num_steps_pending = true;
  if (written.warmup_min_lr) spec.options.warmup_min_lr = *written.warmup_min_lr;
  if (written.warmup_max_lr) spec.options.warmup_max_lr = *written.warmup_max_lr;
  scheduler.collect_unknown(unknown);
  written.config.scheduler = spec;
}

// "data_types": gradients accumulate in float32 in berth (its master gradients); another accumulation
// dtype would change the sums, so it is refused rather than ignored.
void parse_data_types(const Json& node, const std::string& source, std::vector<std::string>& unknown) {
  Block block(node, "data_types", source);
  if (auto dtype = block.string("grad_accum_dtype")) {
    const std::string name = text::to_lower(*dtype);
    BERTH_CHECK(name == "fp32" || name == "float32", source, ": \"data_types.grad_accum_dtype\" is \"",
                *dtype,
                "\", but berth accumulates gradients in float32 only (a lower precision changes the sums). "
                "Fix: \"grad_accum_dtype\": \"fp32\", or remove it");
  }
  block.collect_unknown(unknown);
}

// "activation_checkpointing": as in HF + DeepSpeed, it configures the checkpointing that
// gradient_checkpointing turns on, and turns nothing on itself. Partitioning the saved inputs across model-
// parallel ranks and moving them to host memory are refused (berth keeps each layer's input on its device);
// the rest shape DeepSpeed's buffers and timing only, so berth's recomputation is what they ask for.
void parse_activation_checkpointing(const Json& node, const std::string& source,
                                    std::vector<std::string>& unknown) {
  Block block(node, "activation_checkpointing", source);
  BERTH_CHECK(!block.boolean("partition_activations").value_or(false), source,
              ": \"activation_checkpointing.partition_activations\" true splits each saved layer input "
              "across model-parallel ranks, which berth does not have. Fix: \"partition_activations\": "
              "false, or remove it (with gradient_checkpointing, berth keeps one input per layer)");
  BERTH_CHECK(!block.boolean("cpu_checkpointing").value_or(false), source,
              ": \"activation_checkpointing.cpu_checkpointing\" true moves the saved layer inputs to host "
              "memory, which berth does not do. Fix: \"cpu_checkpointing\": false, or remove it");
  block.boolean("contiguous_memory_optimization");  // DeepSpeed's buffer layout for the saved inputs
  if (auto count = block.integer("number_checkpoints"))
    BERTH_CHECK(*count >= 1, source, ": \"activation_checkpointing.number_checkpoints\" must be >= 1, found ",
                *count, ". Fix: the number of layers, or remove it");
  block.boolean("synchronize_checkpoint_boundary");  // a device synchronisation around each recomputation
  block.boolean("profile");                          // DeepSpeed's timers
  block.collect_unknown(unknown);
}

// The values as written into the config, without TrainingArguments: "auto" precision stays off, "auto"
// and absent batch sizes 0, optimizer params at DeepSpeed's defaults.
void fill_written_values(WrittenDeepSpeedConfig& written) {
  DeepSpeedConfig& config = written.config;
  config.precision.precision = written.precision.fp16.value_or(false)   ? Precision::fp16
                               : written.precision.bf16.value_or(false) ? Precision::bf16
                                                                        : Precision::fp32;
  config.train_batch_size = written.train_batch_size.value_or(0);
  config.train_micro_batch_size_per_gpu = written.micro_batch.value_or(0);
  config.gradient_accumulation_steps = written.accumulation.value_or(0);
  config.gradient_clipping = written.gradient_clipping.value_or(0);
  if (config.optimizer) {
    config.optimizer->lr = written.lr.value_or(0);
    config.optimizer->beta1 = written.beta1.value_or(0.9);
    config.optimizer->beta2 = written.beta2.value_or(0.999);
    config.optimizer->eps = written.eps.value_or(1e-8);
    config.optimizer->weight_decay = written.weight_decay.value_or(0);
  }
}

}  // namespace

WrittenDeepSpeedConfig parse_written_deepspeed_config(const std::string& json_text, const std::string& source,
                                                      std::vector<std::string>* warnings) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    BERTH_FAIL(source, " is not valid JSON (", e.what(),
               "). Fix: write one JSON object, DeepSpeed's config format");
  }
  BERTH_CHECK(root.is_object(), source, " must hold one JSON object (a DeepSpeed config), found ",
              root.type_name(), ". Fix: e.g. {\"zero_optimization\": {\"stage\": 1}}");
  WrittenDeepSpeedConfig written;
  DeepSpeedConfig& config = written.config;
  std::vector<std::string> unknown;
  Block block(root, "", source);
  parse_top_level(block, source, written);
  written.precision = parse_precision(block, source, config.precision.loss_scale, unknown);
  if (const Json* node = block.find("zero_optimization"))
    parse_zero(*node, source, config.zero, config.hidden_size_auto_keys, unknown, warnings);
  if (const Json* node = block.find("optimizer")) parse_optimizer(*node, source, written, unknown);
  if (const Json* node = block.find("scheduler")) parse_scheduler(*node, source, written, unknown);
  if (const Json* node = block.find("data_types")) parse_data_types(*node, source, unknown);
  if (const Json* node = block.find("activation_checkpointing"))
    parse_activation_checkpointing(*node, source, unknown);

  block.collect_unknown(unknown);
  std::sort(unknown.begin(), unknown.end());
  config.unknown_keys = unknown;
  if (!unknown.empty() && warnings)
    warnings->push_back(source + ": ignored " + std::to_string(unknown.size()) +
                        " DeepSpeed config key(s) berth does not read: " + text::join(unknown, ", "));
  fill_written_values(written);
  return written;
}

}  // namespace detail

DeepSpeedConfig parse_deepspeed_config(const std::string& json_text, const std::string& source_name,
                                       std::vector<std::string>* warnings) {
  return detail::parse_written_deepspeed_config(json_text, source_name, warnings).config;
}

}  // namespace berth::train
