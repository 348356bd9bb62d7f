// DeepSpeed JSON configs: parsing (deepspeed/runtime/config.py, zero/config.py semantics), HF's "auto"
// filling and mismatch report (integrations/deepspeed.py), and HF's fsdp string.
#include "berth/train/deepspeed_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "berth/core/error.h"
#include "core/number_text.h"
#include "core/text.h"

namespace berth::train {
namespace {

using Json = nlohmann::json;

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

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
                std::vector<std::string>& unknown, std::vector<std::string>* warnings) {
  Block block(node, "zero_optimization", source);
  if (auto stage = block.integer("stage")) {
    BERTH_CHECK(*stage >= 0 && *stage <= 3, source,
                ": \"zero_optimization.stage\" must be 0, 1, 2 or 3, found ", *stage,
                ". Fix: e.g. \"stage\": 1 (optimizer states sharded)");
    zero.stage = static_cast<int>(*stage);
  }
  const auto non_negative = [&](const char* key, int64_t& into) {
    if (auto value = block.integer(key)) {
      BERTH_CHECK(*value >= 0, source, ": \"zero_optimization.", key, "\" must be >= 0, found ", *value,
                  ". Fix: e.g. \"", key, "\": 200000000");
      into = *value;
    }
  };
  non_negative("reduce_bucket_size", zero.reduce_bucket_size);
  non_negative("allgather_bucket_size", zero.allgather_bucket_size);
  non_negative("stage3_prefetch_bucket_size", zero.stage3_prefetch_bucket_size);
  non_negative("stage3_param_persistence_threshold", zero.stage3_param_persistence_threshold);
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
    warnings->push_back(source + ": zero_optimization uses DeepSpeed's deprecated " + join(deprecated, "; ") +
                        " (applied as written after the arrow)");
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

// Both blocks' "enabled" as written: nullopt when absent or "auto".
struct PrecisionFlags {
  std::optional<bool> fp16, bf16;
  bool fp16_auto = false, bf16_auto = false;
};

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

// The config as written: explicit values, with "auto" and absent told apart.
struct Parsed {
  DeepSpeedConfig config;
  std::optional<int64_t> train_batch_size, micro_batch, accumulation;
  bool train_batch_size_given = false, micro_batch_given = false, accumulation_given = false;
  std::optional<double> gradient_clipping;
  bool gradient_clipping_auto = false;
  PrecisionFlags precision;
  // Optimizer params as written (nullopt: auto or absent).
  std::optional<double> lr, beta1, beta2, eps, weight_decay;
  // Scheduler params as written.
  std::optional<double> warmup_max_lr, warmup_min_lr;
  std::optional<int64_t> warmup_num_steps, total_num_steps;
};

Parsed parse(const std::string& json_text, const std::string& source, std::vector<std::string>* warnings) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    BERTH_FAIL(source, " is not valid JSON (", e.what(),
               "). Fix: write one JSON object, DeepSpeed's config format");
  }
  BERTH_CHECK(root.is_object(), source, " must hold one JSON object (a DeepSpeed config), found ",
              root.type_name(), ". Fix: e.g. {\"zero_optimization\": {\"stage\": 1}}");
  Parsed parsed;
  DeepSpeedConfig& config = parsed.config;
  std::vector<std::string> unknown;
  Block block(root, "", source);

  const auto batch = [&](const char* key, std::optional<int64_t>& into, bool& given) {
    given = block.find(key) != nullptr;
    into = block.integer(key, true);
    if (into)
      BERTH_CHECK(*into >= 1, source, ": \"", key, "\" must be >= 1, found ", *into, ". Fix: e.g. \"", key,
                  "\": \"auto\" (filled from the training arguments)");
  };
  batch("train_batch_size", parsed.train_batch_size, parsed.train_batch_size_given);
  batch("train_micro_batch_size_per_gpu", parsed.micro_batch, parsed.micro_batch_given);
  batch("gradient_accumulation_steps", parsed.accumulation, parsed.accumulation_given);

  parsed.gradient_clipping_auto = block.has_auto("gradient_clipping");
  parsed.gradient_clipping = block.number("gradient_clipping", true);
  if (parsed.gradient_clipping)
    BERTH_CHECK(
        *parsed.gradient_clipping >= 0, source, ": \"gradient_clipping\" must be >= 0 (0: none), found ",
        text::shortest_number_text(*parsed.gradient_clipping), ". Fix: e.g. \"gradient_clipping\": 1.0");
  if (auto value = block.integer("steps_per_print")) {
    BERTH_CHECK(*value >= 1, source, ": \"steps_per_print\" must be >= 1, found ", *value,
                ". Fix: e.g. \"steps_per_print\": 10");
    config.steps_per_print = *value;
  }

  parsed.precision = parse_precision(block, source, config.precision.loss_scale, unknown);
  if (const Json* node = block.find("zero_optimization"))
    parse_zero(*node, source, config.zero, unknown, warnings);

  if (const Json* node = block.find("optimizer")) {
    Block optimizer(*node, "optimizer", source);
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
      parsed.lr = params.number("lr", true);
      if (const Json* betas = params.find("betas"); betas && !is_auto(*betas)) {
        BERTH_CHECK(
            betas->is_array() && betas->size() == 2 && (*betas)[0].is_number() && (*betas)[1].is_number(),
            source, ": \"optimizer.params.betas\" must be two numbers or \"auto\", found ", betas->dump(),
            ". Fix: e.g. \"betas\": [0.9, 0.999]");
        parsed.beta1 = (*betas)[0].get<double>();
        parsed.beta2 = (*betas)[1].get<double>();
      }
      parsed.eps = params.number("eps", true);
      parsed.weight_decay = params.number("weight_decay", true);
      if (auto w_mode = params.boolean("adam_w_mode"))
        BERTH_CHECK(
            *w_mode, source,
            ": \"optimizer.params.adam_w_mode\" false asks for Adam with L2 regularisation in the "
            "gradient, which berth does not implement. Fix: \"adam_w_mode\": true (DeepSpeed's default), "
            "i.e. AdamW");
      params.boolean("torch_adam");  // which kernel DeepSpeed uses; the arithmetic is the same
      params.collect_unknown(unknown);
    }
    optimizer.collect_unknown(unknown);
    config.optimizer = spec;
  }

  if (const Json* node = block.find("scheduler")) {
    Block scheduler(*node, "scheduler", source);
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
    if (const Json* params_node = scheduler.find("params")) {
      Block params(*params_node, "scheduler.params", source);
      parsed.warmup_min_lr = params.number("warmup_min_lr", true);
      parsed.warmup_max_lr = params.number("warmup_max_lr", true);
      spec.warmup_num_steps_pending = params.has_auto("warmup_num_steps");
      parsed.warmup_num_steps = params.integer("warmup_num_steps", true);
      spec.total_num_steps_pending = params.has_auto("total_num_steps");
      parsed.total_num_steps = params.integer("total_num_steps", true);
      if (auto warmup_type = params.string("warmup_type")) {
        BERTH_CHECK(*warmup_type == "log" || *warmup_type == "linear", source,
                    ": \"scheduler.params.warmup_type\" must be \"log\" or \"linear\", found \"",
                    *warmup_type, "\". Fix: \"warmup_type\": \"linear\"");
        spec.options.warmup_type = *warmup_type;
      }
      if (auto value = params.number("warmup_min_ratio")) spec.options.warmup_min_ratio = *value;
      if (auto value = params.number("cos_min_ratio")) spec.options.cos_min_ratio = *value;
      params.collect_unknown(unknown);
    }
    if (parsed.warmup_num_steps) {
      BERTH_CHECK(*parsed.warmup_num_steps >= 0, source,
                  ": \"scheduler.params.warmup_num_steps\" must be >= 0, found ", *parsed.warmup_num_steps,
                  ". Fix: e.g. \"warmup_num_steps\": \"auto\"");
      spec.options.warmup_steps = *parsed.warmup_num_steps;
    }
    if (parsed.total_num_steps) {
      BERTH_CHECK(*parsed.total_num_steps >= 1, source,
                  ": \"scheduler.params.total_num_steps\" must be >= 1, found ", *parsed.total_num_steps,
                  ". Fix: e.g. \"total_num_steps\": \"auto\"");
      spec.options.total_steps = *parsed.total_num_steps;
    }
    // WarmupLR needs no total; the others do and, without one, would never decay: "auto" in effect.
    if (type != "WarmupLR" && !parsed.total_num_steps) spec.total_num_steps_pending = true;
    if (parsed.warmup_min_lr) spec.options.warmup_min_lr = *parsed.warmup_min_lr;
    if (parsed.warmup_max_lr) spec.options.warmup_max_lr = *parsed.warmup_max_lr;
    scheduler.collect_unknown(unknown);
    config.scheduler = spec;
  }

  block.collect_unknown(unknown);
  std::sort(unknown.begin(), unknown.end());
  config.unknown_keys = unknown;
  if (!unknown.empty() && warnings)
    warnings->push_back(source + ": ignored " + std::to_string(unknown.size()) +
                        " DeepSpeed config key(s) berth does not read: " + join(unknown, ", "));
  // Without TrainingArguments "auto" precision stays off; resolve fills it.
  config.precision.precision = parsed.precision.fp16.value_or(false)   ? Precision::fp16
                               : parsed.precision.bf16.value_or(false) ? Precision::bf16
                                                                       : Precision::fp32;
  config.train_batch_size = parsed.train_batch_size.value_or(0);
  config.train_micro_batch_size_per_gpu = parsed.micro_batch.value_or(0);
  config.gradient_accumulation_steps = parsed.accumulation.value_or(0);
  config.gradient_clipping = parsed.gradient_clipping.value_or(0);
  if (config.optimizer) {
    config.optimizer->lr = parsed.lr.value_or(0);
    config.optimizer->beta1 = parsed.beta1.value_or(0.9);
    config.optimizer->beta2 = parsed.beta2.value_or(0.999);
    config.optimizer->eps = parsed.eps.value_or(1e-8);
    config.optimizer->weight_decay = parsed.weight_decay.value_or(0);
  }
  return parsed;
}

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
        join(lines_, "\n"),
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
  std::ifstream in(text_or_path, std::ios::binary);
  BERTH_CHECK(in, "cannot read the DeepSpeed config ", text_or_path,
              ": no such file or not readable. Fix: --deepspeed PATH to a DeepSpeed JSON config");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

DeepSpeedConfig parse_deepspeed_config(const std::string& json_text, const std::string& source_name,
                                       std::vector<std::string>* warnings) {
  return parse(json_text, source_name, warnings).config;
}

DeepSpeedConfig resolve_deepspeed_config(const std::string& config_text_or_path,
                                         const TrainingArguments& args, int64_t world_size,
                                         std::vector<std::string>* warnings) {
  BERTH_CHECK(world_size >= 1, "resolve_deepspeed_config: world_size must be >= 1, found ", world_size,
              ". Fix: pass the number of ranks");
  std::string source;
  const std::string text = read_config_text(config_text_or_path, source);
  Parsed parsed = parse(text, source, warnings);
  DeepSpeedConfig& config = parsed.config;
  Mismatches mismatches(source);

  // Batch sizes: DeepSpeed's rule among the explicit values first (runtime/config.py), then HF's comparison.
  const int64_t args_micro = args.per_device_train_batch_size;
  const int64_t args_accumulation = args.gradient_accumulation_steps;
  const int64_t args_train = args_micro * args_accumulation * world_size;
  auto& train = parsed.train_batch_size;
  auto& micro = parsed.micro_batch;
  auto& accumulation = parsed.accumulation;
  if (train && micro && accumulation) {
    BERTH_CHECK(
        *train == *micro * *accumulation * world_size, source,
        ": train_batch_size must equal train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
        "world size, found ",
        *train, " != ", *micro, " x ", *accumulation, " x ", world_size, " = ",
        *micro * *accumulation * world_size,
        ". Fix: set one of them to \"auto\" (or remove it) and DeepSpeed's rule derives it");
  } else if (train && micro && !parsed.accumulation_given) {
    BERTH_CHECK(*train % (*micro * world_size) == 0, source,
                ": gradient_accumulation_steps = train_batch_size / "
                "(train_micro_batch_size_per_gpu x world size) = ",
                *train, " / (", *micro, " x ", world_size,
                ") is not a whole number. Fix: make train_batch_size a multiple of ", *micro * world_size);
    accumulation = *train / (*micro * world_size);
  } else if (train && accumulation && !parsed.micro_batch_given) {
    BERTH_CHECK(*train % (*accumulation * world_size) == 0, source,
                ": train_micro_batch_size_per_gpu = "
                "train_batch_size / (gradient_accumulation_steps x world size) = ",
                *train, " / (", *accumulation, " x ", world_size,
                ") is not a whole number. Fix: make train_batch_size a multiple of ",
                *accumulation * world_size);
    micro = *train / (*accumulation * world_size);
  } else if (micro && accumulation && !parsed.train_batch_size_given) {
    train = *micro * *accumulation * world_size;
  }
  if (micro)
    mismatches.check("train_micro_batch_size_per_gpu", static_cast<double>(*micro),
                     "per_device_train_batch_size", static_cast<double>(args_micro),
                     "--per_device_train_batch_size " + std::to_string(*micro));
  if (accumulation)
    mismatches.check("gradient_accumulation_steps", static_cast<double>(*accumulation),
                     "gradient_accumulation_steps", static_cast<double>(args_accumulation),
                     "--gradient_accumulation_steps " + std::to_string(*accumulation));
  if (train)
    mismatches.check(
        "train_batch_size", static_cast<double>(*train),
        "train_batch_size (calculated: per_device_train_batch_size x gradient_accumulation_steps x " +
            std::to_string(world_size) + " ranks)",
        static_cast<double>(args_train), "\"auto\"");
  config.train_batch_size = args_train;
  config.train_micro_batch_size_per_gpu = args_micro;
  config.gradient_accumulation_steps = args_accumulation;

  if (parsed.gradient_clipping)
    mismatches.check("gradient_clipping", *parsed.gradient_clipping, "max_grad_norm", args.max_grad_norm,
                     "--max_grad_norm " + text::shortest_number_text(*parsed.gradient_clipping));
  config.gradient_clipping = parsed.gradient_clipping
                                 ? *parsed.gradient_clipping
                                 : (parsed.gradient_clipping_auto ? args.max_grad_norm : 0.0);

  // Precision: "auto" follows the arguments. An explicit "enabled": true turns the precision on (the config
  // is where DeepSpeed users choose it: the seed's config enables fp16 with no --fp16 beside it); what cannot
  // both hold is a mismatch: the config disabling what a flag asked for, or enabling the other precision.
  const auto& precision = parsed.precision;
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
  config.precision.precision = fp16 ? Precision::fp16 : bf16 ? Precision::bf16 : Precision::fp32;

  if (config.optimizer) {
    DeepSpeedOptimizer& optimizer = *config.optimizer;
    if (parsed.lr)
      mismatches.check("optimizer.params.lr", *parsed.lr, "learning_rate", args.learning_rate,
                       "--learning_rate " + text::shortest_number_text(*parsed.lr));
    if (parsed.beta1)
      mismatches.check("optimizer.params.betas[0]", *parsed.beta1, "adam_beta1", args.adam_beta1,
                       "--adam_beta1 " + text::shortest_number_text(*parsed.beta1));
    if (parsed.beta2)
      mismatches.check("optimizer.params.betas[1]", *parsed.beta2, "adam_beta2", args.adam_beta2,
                       "--adam_beta2 " + text::shortest_number_text(*parsed.beta2));
    if (parsed.eps)
      mismatches.check("optimizer.params.eps", *parsed.eps, "adam_epsilon", args.adam_epsilon,
                       "--adam_epsilon " + text::shortest_number_text(*parsed.eps));
    if (parsed.weight_decay)
      mismatches.check("optimizer.params.weight_decay", *parsed.weight_decay, "weight_decay",
                       args.weight_decay,
                       "--weight_decay " + text::shortest_number_text(*parsed.weight_decay));
    optimizer.lr = args.learning_rate;
    optimizer.beta1 = args.adam_beta1;
    optimizer.beta2 = args.adam_beta2;
    optimizer.eps = args.adam_epsilon;
    optimizer.weight_decay = args.weight_decay;
  }
  if (config.scheduler) {
    optim::SchedulerOptions& options = config.scheduler->options;
    if (parsed.warmup_max_lr)
      mismatches.check("scheduler.params.warmup_max_lr", *parsed.warmup_max_lr, "learning_rate",
                       args.learning_rate,
                       "--learning_rate " + text::shortest_number_text(*parsed.warmup_max_lr));
    options.warmup_max_lr = args.learning_rate;
    options.warmup_min_lr = parsed.warmup_min_lr.value_or(0.0);  // HF's fill_only: "auto" is 0
    // HF fills an "auto" warmup from the arguments at train start; an absent one is DeepSpeed's 1000.
    if (config.scheduler->warmup_num_steps_pending) options.warmup_steps = 0;
  }
  mismatches.throw_if_any();
  return config;
}

void finalize_deepspeed_config(DeepSpeedConfig& config, const TrainingArguments& args, int64_t total_steps) {
  if (!config.scheduler) return;
  DeepSpeedScheduler& scheduler = *config.scheduler;
  Mismatches mismatches("DeepSpeed config");
  const int64_t warmup = args.resolved_warmup_steps(total_steps);
  if (scheduler.total_num_steps_pending) {
    scheduler.options.total_steps = total_steps;
    scheduler.total_num_steps_pending = false;
  } else if (scheduler.type != "WarmupLR") {
    mismatches.check("scheduler.params.total_num_steps", static_cast<double>(scheduler.options.total_steps),
                     "num_training_steps (calculated)", static_cast<double>(total_steps), "\"auto\"");
  }
  if (scheduler.warmup_num_steps_pending) {
    scheduler.options.warmup_steps = warmup;
    scheduler.warmup_num_steps_pending = false;
  }
  mismatches.throw_if_any();
}

dist::ZeroOptions zero_options_from_fsdp(const std::string& fsdp) {
  dist::ZeroOptions zero;
  std::istringstream in(fsdp);
  std::string option;
  std::vector<std::string> strategies;
  bool offload = false;
  while (in >> option) {
    const std::string name = text::to_lower(option);
    if (name == "full_shard" || name == "shard_grad_op" || name == "no_shard") {
      strategies.push_back(name);
      zero.stage = name == "full_shard" ? 3 : name == "shard_grad_op" ? 2 : 0;
    } else if (name == "offload") {
      offload = true;
    } else if (name == "auto_wrap") {
      // berth's ZeRO-3 already gathers parameters one layer at a time: the wrap is implied.
    } else if (name == "hybrid_shard" || name == "hybrid_shard_zero2") {
      BERTH_FAIL("fsdp option '", option,
                 "' (sharding within a node, replicating across nodes) is not supported by berth. Fix: "
                 "--fsdp \"full_shard\" or \"shard_grad_op\"");
    } else {
      BERTH_FAIL(
          "unknown fsdp option '", option,
          "': berth takes full_shard, shard_grad_op, no_shard, offload and auto_wrap (HF's names). Fix: e.g. "
          "--fsdp \"full_shard offload\"");
    }
  }
  BERTH_CHECK(strategies.size() <= 1, "fsdp names ", strategies.size(), " sharding strategies (",
              join(strategies, ", "), "); a run uses one. Fix: keep one of them");
  if (offload) {
    BERTH_CHECK(zero.stage >= 2,
                "fsdp option 'offload' can't work on its own: it needs full_shard or "
                "shard_grad_op (as in HF). Fix: --fsdp \"full_shard offload\"");
    zero.offload_optimizer.device = "cpu";
    if (zero.stage == 3) zero.offload_param.device = "cpu";
  }
  return zero;
}

Precision precision_from_arguments(const TrainingArguments& args) {
  return args.fp16 ? Precision::fp16 : args.bf16 ? Precision::bf16 : Precision::fp32;
}

}  // namespace berth::train
