// The table of TrainingArguments' fields and the per-type reading, writing and checking of one field.
#include "train/training_argument_fields.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "berth/core/error.h"
#include "berth/device/device_request.h"
#include "berth/dist/zero_options.h"
#include "berth/optim/scheduler_kwargs.h"
#include "berth/placement/placement_policy.h"
#include "core/number_text.h"
#include "core/text.h"

namespace berth::train::detail {
namespace {

using Json = nlohmann::json;

// HF's integrations that berth lacks; in report_to they are errors on the command line and ignored with a
// warning in a JSON file (HF's own files name them).
const std::vector<std::string>& foreign_integrations() {
  static const std::vector<std::string> names = {"azure_ml", "clearml", "codecarbon", "comet_ml",
                                                 "dagshub",  "dvclive", "flyte",      "mlflow",
                                                 "neptune",  "ray",     "wandb",      "swanlab"};
  return names;
}

void check_one_of(std::string_view name, const std::string& value, std::span<const char* const> accepted) {
  if (std::find(accepted.begin(), accepted.end(), value) != accepted.end()) return;
  BERTH_FAIL("training argument ", name, " must be one of ",
             text::join(std::vector<std::string>(accepted.begin(), accepted.end()), ", "), ", found '", value,
             "'. Fix: e.g. ", name, " ", accepted.front());
}

// `parse` reads the field's text with a parser of its own, whose berth::Error becomes the field's.
template <typename Parse>
void check_parses(std::string_view name, Parse parse) {
  try {
    parse();
  } catch (const Error& e) {
    BERTH_FAIL("training argument ", name, ": ", e.what());
  }
}

void check_report_to(std::string_view name, const std::string& item) {
  check_not_foreign(item);
  static constexpr const char* kReportTo[] = {"jsonl", "tensorboard", "none", "all"};
  check_one_of(name, text::to_lower(item), kReportTo);
}

void check_rendezvous(std::string_view name, const std::string& value) {
  BERTH_CHECK(value == "env" || value.rfind("file://", 0) == 0 || value.rfind("tcp://", 0) == 0,
              "training argument ", name, " must be env, file://PATH or tcp://HOST:PORT, found '", value,
              "'. Fix: e.g. rendezvous file:///shared/berth-rdzv (a path every rank can reach)");
}

void check_lr_scheduler_kwargs(std::string_view name, const std::string& value) {
  check_parses(name, [&] { optim::check_scheduler_kwargs_json(value); });
}

// HF's activation_checkpointing_kwargs: every_n_layers and offload for activation_checkpointing_enable, the
// rest for torch.utils.checkpoint. use_reentrant picks torch's implementation, not the numbers, so either
// value gives berth's one recomputation; berth always restores the generators (preserve_rng_state), so
// dropout draws the forward's masks again.
void check_gradient_checkpointing_kwargs(std::string_view name, const std::string& value) {
  const char* example = "'{\"use_reentrant\": false, \"every_n_layers\": 2}'";
  Json kwargs;
  try {
    kwargs = Json::parse(value);
  } catch (const Json::exception&) {
    BERTH_FAIL("training argument ", name, " must be a JSON object, found '", value, "'. Fix: e.g. ", name,
               " ", example);
  }
  if (kwargs.is_null()) return;
  BERTH_CHECK(kwargs.is_object(), "training argument ", name, " must be a JSON object, found '", value,
              "'. Fix: e.g. ", name, " ", example);
  for (const auto& [key, item] : kwargs.items()) {
    if (item.is_null() || (key == "use_reentrant" && item.is_boolean()) ||
        (key == "preserve_rng_state" && item == true) || (key == "offload" && item == false))
      continue;
    if (key == "every_n_layers") {
      BERTH_CHECK(item.is_number_integer() && item.get<int64_t>() >= 1, "training argument ", name,
                  ": \"every_n_layers\" must be a whole number >= 1, found ", item.dump(),
                  ". Fix: e.g. \"every_n_layers\": 2 (1: every layer)");
      continue;
    }
    BERTH_FAIL(
        "training argument ", name, ": berth takes use_reentrant (true or false: the same recomputation ",
        "and results), every_n_layers, preserve_rng_state true and offload false, found \"", key,
        "\": ", item.dump(), ". Fix: remove it (berth always restores the random generators, so dropout ",
        "is redrawn as in the forward, and keeps each layer's saved input on its device)");
  }
}

void check_device(std::string_view name, const std::string& value) {
  check_parses(name, [&] { parse_device(value); });
}

void check_placement(std::string_view name, const std::string& value) {
  check_parses(name, [&] { parse_placement_policy(value); });
}

void check_fsdp(std::string_view name, const std::string& value) {
  check_parses(name, [&] { dist::zero_options_from_fsdp(value); });
}

void check_steps_value(std::string_view name, double value) {
  BERTH_CHECK(value >= 0, "training argument ", name, " must be >= 0, found ",
              text::shortest_number_text(value),
              ". Fix: a step count like 500, or a fraction of the total steps below 1 like 0.1");
  // HF: above 1 it is a step count, so it must be whole.
  BERTH_CHECK(value <= 1 || std::floor(value) == value, "training argument ", name,
              " must be a whole number of steps when above 1, found ", text::shortest_number_text(value),
              ". Fix: e.g. ", name, " ", text::shortest_number_text(std::floor(value)));
}

constexpr bool is_number_field(const FieldPtr& ptr) {
  return std::holds_alternative<int64_t Args::*>(ptr) || std::holds_alternative<double Args::*>(ptr) ||
         std::holds_alternative<std::optional<int64_t> Args::*>(ptr) ||
         std::holds_alternative<std::optional<double> Args::*>(ptr);
}

constexpr bool is_text_field(const FieldPtr& ptr) {
  return std::holds_alternative<std::string Args::*>(ptr) ||
         std::holds_alternative<std::optional<std::string> Args::*>(ptr) ||
         std::holds_alternative<std::vector<std::string> Args::*>(ptr);
}

// The words of the OneOf rules below; the first is the Fix's example.
constexpr const char* kSchedulerTypes[] = {"linear",
                                           "cosine",
                                           "constant",
                                           "constant_with_warmup",
                                           "polynomial",
                                           "cosine_with_restarts",
                                           "inverse_sqrt",
                                           "reduce_lr_on_plateau",
                                           "cosine_with_min_lr",
                                           "warmup_stable_decay"};
constexpr const char* kLoggingStrategies[] = {"steps", "no", "epoch"};
constexpr const char* kEvalStrategies[] = {"no", "steps", "epoch"};
constexpr const char* kSaveStrategies[] = {"steps", "no", "epoch", "best"};
constexpr const char* kDdpBackends[] = {"gloo", "nccl", "mpi"};

// Every field in declaration order; constant-initialised, so usable before any dynamic initialisation.
constexpr Field kFields[] = {
    {"output_dir", &Args::output_dir, "Folder for checkpoints, logs and the final model (required)"},
    {"overwrite_output_dir", &Args::overwrite_output_dir, "Train into an output_dir that has content"},
    {"num_train_epochs", &Args::num_train_epochs, "Epochs to train (fractions allowed) when max_steps is -1"},
    {"max_steps", &Args::max_steps, "Optimizer steps to train; -1: use num_train_epochs",
     Range{.lo = 0,
           .lo_open = true,
           .also = -1,
           .also_means = "use num_train_epochs",
           .example = "max_steps 1000"}},
    {"per_device_train_batch_size", &Args::per_device_train_batch_size, "Training batch size per device",
     Range{.lo = 1, .example = "per_device_train_batch_size 8"}},
    {"per_device_eval_batch_size", &Args::per_device_eval_batch_size, "Evaluation batch size per device",
     Range{.lo = 1, .example = "per_device_eval_batch_size 8"}},
    {"auto_find_batch_size", &Args::auto_find_batch_size,
     "On out of memory, halve per_device_train_batch_size and start again"},
    {"gradient_accumulation_steps", &Args::gradient_accumulation_steps,
     "Batches whose gradients add up to one optimizer step",
     Range{.lo = 1, .example = "gradient_accumulation_steps 8"}},
    {"activation_checkpointing", &Args::gradient_checkpointing,
     "Recompute each transformer layer in backward instead of keeping its activations: less memory, more "
     "compute (alias: gradient_checkpointing)"},
    {"activation_checkpointing_kwargs", &Args::gradient_checkpointing_kwargs,
     "Checkpointing options as a JSON object: every_n_layers N (layers 0, N, 2N, ...), use_reentrant true or "
     "false (the same recomputation and results in berth), preserve_rng_state true, offload false",
     Checked{check_gradient_checkpointing_kwargs}},
    {"gradient_checkpointing", &Args::gradient_checkpointing,
     "HF's older name of activation_checkpointing (the same setting)"},
    {"gradient_checkpointing_kwargs", &Args::gradient_checkpointing_kwargs,
     "HF's older name of activation_checkpointing_kwargs (the same setting)",
     Checked{check_gradient_checkpointing_kwargs}},
    {"learning_rate", &Args::learning_rate, "Peak learning rate of AdamW",
     Range{.lo = 0,
           .hi_open = true,
           .note = "(0 freezes the weights, as HF allows)",
           .example = "learning_rate 5e-5"}},
    {"weight_decay", &Args::weight_decay, "AdamW weight decay (not on biases and LayerNorm weights)",
     Range{.lo = 0, .example = "weight_decay 0.01"}},
    {"adam_beta1", &Args::adam_beta1, "AdamW beta1",
     Range{.lo = 0, .hi = 1, .hi_open = true, .example = "adam_beta1 0.9, adam_beta2 0.999"}},
    {"adam_beta2", &Args::adam_beta2, "AdamW beta2",
     Range{.lo = 0, .hi = 1, .hi_open = true, .example = "adam_beta1 0.9, adam_beta2 0.999"}},
    {"adam_epsilon", &Args::adam_epsilon, "AdamW epsilon",
     Range{.lo = 0, .lo_open = true, .example = "adam_epsilon 1e-8"}},
    {"max_grad_norm", &Args::max_grad_norm, "Clip the gradient norm to this; 0: no clipping",
     Range{.lo = 0, .note = "(0: no clipping)", .example = "max_grad_norm 1.0"}},
    {"label_smoothing_factor", &Args::label_smoothing_factor,
     "HF's label smoothing of the classification, token and language-model losses; 0: off",
     Range{.lo = 0, .hi = 1, .hi_open = true, .example = "label_smoothing_factor 0.1"}},
    {"lr_scheduler_type", &Args::lr_scheduler_type,
     "linear, cosine, constant, constant_with_warmup, polynomial, cosine_with_restarts, inverse_sqrt, "
     "reduce_lr_on_plateau, cosine_with_min_lr or warmup_stable_decay",
     OneOf{kSchedulerTypes}},
    {"lr_scheduler_kwargs", &Args::lr_scheduler_kwargs,
     "The schedule's options as a JSON object, by HF's names, e.g. '{\"num_cycles\": 2}'",
     Checked{check_lr_scheduler_kwargs}},
    {"warmup_ratio", &Args::warmup_ratio, "Warmup as a fraction of the total steps (when warmup_steps is 0)",
     Range{.lo = 0, .hi = 1, .example = "warmup_ratio 0.1"}},
    {"warmup_steps", &Args::warmup_steps, "Warmup steps; > 0 overrides warmup_ratio",
     Range{.lo = 0, .example = "warmup_steps 100"}},
    {"logging_strategy", &Args::logging_strategy, "When to log: no, steps or epoch",
     OneOf{kLoggingStrategies}},
    {"logging_first_step", &Args::logging_first_step, "Also log after the first step"},
    {"logging_steps", &Args::logging_steps, "Log every N steps; below 1: a fraction of the total steps",
     StepsValue{}},
    {"logging_nan_inf_filter", &Args::logging_nan_inf_filter,
     "A nan/inf step loss is logged as the mean of the losses since the last log (logging only)"},
    {"eval_strategy", &Args::eval_strategy, "When to evaluate: no, steps or epoch", OneOf{kEvalStrategies}},
    {"eval_steps", &Args::eval_steps,
     "Evaluate every N steps with eval_strategy=steps; unset: logging_steps; below 1: a fraction",
     StepsValue{}},
    {"eval_on_start", &Args::eval_on_start, "Evaluate once before the first training step"},
    {"save_strategy", &Args::save_strategy, "When to save a checkpoint: no, steps, epoch or best",
     OneOf{kSaveStrategies}},
    {"save_steps", &Args::save_steps, "Save every N steps with save_strategy=steps; below 1: a fraction",
     StepsValue{}},
    {"save_total_limit", &Args::save_total_limit, "Keep at most N checkpoints (the best one is kept too)",
     Range{.lo = 1,
           .note = "when set",
           .example = "save_total_limit 2, or leave it unset to keep every checkpoint"}},
    {"save_only_model", &Args::save_only_model,
     "Checkpoints hold only the model (no optimizer, scheduler or RNG state): smaller, but no resuming"},
    {"save_on_each_node", &Args::save_on_each_node,
     "With several nodes, every node's first process writes checkpoints and the final model"},
    {"load_best_model_at_end", &Args::load_best_model_at_end,
     "Load the best checkpoint at the end (needs save_strategy = eval_strategy)"},
    {"metric_for_best_model", &Args::metric_for_best_model,
     "Metric that picks the best checkpoint, e.g. f1; unset with load_best_model_at_end: loss",
     NotEmpty{.must = "name a metric",
              .blank_is_empty = true,
              .example = "metric_for_best_model f1, or leave it unset"}},
    {"greater_is_better", &Args::greater_is_better,
     "Whether a larger metric is better; unset: false for *loss metrics, else true"},
    {"seed", &Args::seed, "Seed for model initialization and everything else random"},
    {"data_seed", &Args::data_seed, "Seed for data shuffling; unset: seed"},
    {"dataloader_drop_last", &Args::dataloader_drop_last, "Drop the last incomplete training batch"},
    {"group_by_length", &Args::group_by_length,
     "Shuffle in megabatches sorted by length, so that training batches pad little"},
    {"resume_from_checkpoint", &Args::resume_from_checkpoint,
     "Resume from this checkpoint folder, or 'latest' for the newest in output_dir",
     NotEmpty{.must = "be a checkpoint folder or 'latest'",
              .example = "resume_from_checkpoint latest, or leave it unset"}},
    {"report_to", &Args::report_to,
     "Where to report logs: jsonl (output_dir/log.jsonl), tensorboard (output_dir/runs/), all or none",
     Checked{check_report_to}},
    {"disable_tqdm", &Args::disable_tqdm, "No progress bar"},
    {"ddp_backend", &Args::ddp_backend,
     "Process-group backend: gloo, nccl or mpi; unset: nccl on CUDA, else gloo", OneOf{kDdpBackends, true}},
    {"ddp_bucket_cap_mb", &Args::ddp_bucket_cap_mb, "Size of DDP's gradient buckets in MB; unset: 25",
     Range{.lo = 0, .lo_open = true, .example = "ddp_bucket_cap_mb 25, or leave it unset"}},
    {"ddp_find_unused_parameters", &Args::ddp_find_unused_parameters,
     "Allow parameters that get no gradient under DDP; unset: false (they are an error naming them)"},
    {"ddp_timeout", &Args::ddp_timeout, "Seconds a collective may take before it fails naming the ranks",
     Range{.lo = 0, .lo_open = true, .note = "seconds", .example = "ddp_timeout 1800"}},
    {"rendezvous", &Args::rendezvous,
     "Where ranks meet: env (MASTER_ADDR/MASTER_PORT), file://PATH or tcp://HOST:PORT",
     Checked{check_rendezvous}},
    {"fp16", &Args::fp16, "fp16 mixed precision (fp32 master weights, dynamic loss scaling)"},
    {"bf16", &Args::bf16, "bf16 mixed precision (fp32 master weights)"},
    {"deepspeed", &Args::deepspeed,
     "DeepSpeed JSON config file (zero_optimization, fp16/bf16, optimizer, scheduler, batch sizes)",
     NotEmpty{.must = "be a DeepSpeed JSON config file",
              .blank_is_empty = true,
              .example = "deepspeed ds_config.json, or leave it unset"}},
    {"fsdp", &Args::fsdp,
     "HF's FSDP options, space-separated: full_shard (ZeRO-3), shard_grad_op (ZeRO-2), no_shard, offload, "
     "auto_wrap; empty: off",
     Checked{check_fsdp}},
    {"device", &Args::device, "auto, cpu, cuda or cuda:N", Checked{check_device}},
    {"placement", &Args::placement, "move (put the model on the device) or strict (it must be there)",
     Checked{check_placement}},
    {"threads", &Args::threads, "CPU threads for torch; 0: berth's default",
     Range{.lo = 0, .note = "(0: berth's default)", .example = "threads 4"}},
    {"max_length", &Args::max_length,
     "Tokenizer truncation length in tokens; unset: what the model and tokenizer allow (the smaller of "
     "the position limit and model_max_length)",
     Range{.lo = 2, .note = "([CLS] and [SEP])", .example = "max_length 128, or leave it unset"}},
    {"truncation_keep_head", &Args::truncation_keep_head,
     "Head+tail truncation: a longer text keeps its first N tokens and the rest from its end (the "
     "middle dropped); unset: the end is cut off, as HF does"},
    {"dataloader_prefetch", &Args::dataloader_prefetch, "Batches the data loader prepares ahead",
     Range{.lo = 0, .example = "dataloader_prefetch 2"}},
    {"max_nonfinite_steps", &Args::max_nonfinite_steps,
     "Stop after N optimizer steps in a row with nan/inf gradients (each one is skipped); 0: never stop",
     Range{.lo = 0, .note = "(0: never stop)", .example = "max_nonfinite_steps 10"}},
};

// Numbers get ranges and steps rules, text fields the rest: checked here, so validate() need not.
constexpr bool rules_fit_their_fields() {
  for (const Field& field : kFields) {
    const bool number_rule =
        std::holds_alternative<Range>(field.rule) || std::holds_alternative<StepsValue>(field.rule);
    const bool text_rule = std::holds_alternative<OneOf>(field.rule) ||
                           std::holds_alternative<NotEmpty>(field.rule) ||
                           std::holds_alternative<Checked>(field.rule);
    if ((number_rule && !is_number_field(field.ptr)) || (text_rule && !is_text_field(field.ptr)))
      return false;
  }
  return true;
}

static_assert(rules_fit_their_fields(), "a field's rule does not fit its type (see Rule)");

[[noreturn]] void bad_text(std::string_view name, std::string_view text, const char* expected,
                           const char* example) {
  BERTH_FAIL("training argument ", name, " expects ", expected, ", found '", text, "'. Fix: e.g. ", name, " ",
             example);
}

int64_t parse_int(std::string_view name, std::string_view text) {
  const std::string s(text::trim(text));
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad_text(name, text, "a whole number", "10");
  return value;
}

bool parse_bool(std::string_view name, std::string_view text) {
  const std::string s = text::to_lower(text::trim(text));
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no") return false;
  bad_text(name, text, "true/false/1/0/yes/no", "true");
}

bool is_unset_text(std::string_view text) {
  const std::string s = text::to_lower(text::trim(text));
  return s == "none" || s == "null";
}

int64_t json_int(const std::string& source, std::string_view name, const Json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  // Python writes some whole numbers as floats (500.0); accept those that are whole.
  if (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>() &&
      std::fabs(value.get<double>()) < 9e18)
    return static_cast<int64_t>(value.get<double>());
  bad_json(source, name, "a whole number", value);
}

double json_double(const std::string& source, std::string_view name, const Json& value) {
  if (!value.is_number()) bad_json(source, name, "a number", value);
  return value.get<double>();
}

// A field's value as a number; nullopt for an unset optional and for fields that are not numbers.
struct NumberValue {
  const Args& args;
  std::optional<double> operator()(int64_t Args::*p) const { return static_cast<double>(args.*p); }
  std::optional<double> operator()(double Args::*p) const { return args.*p; }
  std::optional<double> operator()(std::optional<int64_t> Args::*p) const {
    return (args.*p) ? std::optional<double>(static_cast<double>(*(args.*p))) : std::nullopt;
  }
  std::optional<double> operator()(std::optional<double> Args::*p) const { return args.*p; }
  std::optional<double> operator()(const auto&) const { return std::nullopt; }
};

// A field's text values: a string's, a set optional string's, a list's items; none for other fields.
struct TextValues {
  const Args& args;
  std::vector<std::string> operator()(std::string Args::*p) const { return {args.*p}; }
  std::vector<std::string> operator()(std::optional<std::string> Args::*p) const {
    if (!(args.*p)) return {};
    return {*(args.*p)};
  }
  std::vector<std::string> operator()(std::vector<std::string> Args::*p) const { return args.*p; }
  std::vector<std::string> operator()(const auto&) const { return {}; }
};

bool in_range(const Range& range, double value) {
  if (range.also && value == *range.also) return true;
  return (range.lo_open ? value > range.lo : value >= range.lo) &&
         (range.hi_open ? value < range.hi : value <= range.hi);
}

// ">= 0", "> 0", "in [0, 1)", "-1 (use num_train_epochs) or > 0", each with its note.
std::string range_text(const Range& range) {
  const auto number = text::shortest_number_text;
  std::string out;
  if (std::isfinite(range.lo) && std::isfinite(range.hi)) {
    out = std::string("in ") + (range.lo_open ? "(" : "[") + number(range.lo) + ", " + number(range.hi) +
          (range.hi_open ? ")" : "]");
  } else if (std::isfinite(range.lo)) {
    out = (range.lo_open ? "> " : ">= ") + number(range.lo);
  } else {
    out = (range.hi_open ? "< " : "<= ") + number(range.hi);
  }
  if (range.also) out = number(*range.also) + " (" + range.also_means + ") or " + out;
  if (*range.note) out += std::string(" ") + range.note;
  return out;
}

}  // namespace

double parse_double(std::string_view name, std::string_view text) {
  const std::string s(text::trim(text));
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value))
    bad_text(name, text, "a finite number", "0.5");
  return value;
}

std::span<const Field> training_argument_fields() { return kFields; }

const Field* find_training_argument_field(std::string_view name) {
  for (const Field& field : kFields)
    if (name == field.name) return &field;
  return nullptr;
}

const char* field_type_name(const FieldPtr& ptr) {
  static const char* const names[] = {"string", "bool",    "int",   "float", "int?",
                                      "float?", "string?", "bool?", "list"};
  return names[ptr.index()];
}

std::string field_text(const Args& args, const FieldPtr& ptr) {
  struct Visitor {
    const Args& args;
    std::string operator()(std::string Args::*p) const { return args.*p; }
    std::string operator()(bool Args::*p) const { return args.*p ? "true" : "false"; }
    std::string operator()(int64_t Args::*p) const { return std::to_string(args.*p); }
    std::string operator()(double Args::*p) const { return text::shortest_number_text(args.*p); }
    std::string operator()(std::optional<int64_t> Args::*p) const {
      return (args.*p) ? std::to_string(*(args.*p)) : "";
    }
    std::string operator()(std::optional<double> Args::*p) const {
      return (args.*p) ? text::shortest_number_text(*(args.*p)) : "";
    }
    std::string operator()(std::optional<std::string> Args::*p) const { return (args.*p).value_or(""); }
    std::string operator()(std::optional<bool> Args::*p) const {
      return (args.*p) ? (*(args.*p) ? "true" : "false") : "";
    }
    std::string operator()(std::vector<std::string> Args::*p) const { return text::join(args.*p, ","); }
  };
  return std::visit(Visitor{args}, ptr);
}

Json field_json(const Args& args, const FieldPtr& ptr) {
  struct Visitor {
    const Args& args;
    Json operator()(std::string Args::*p) const { return args.*p; }
    Json operator()(bool Args::*p) const { return args.*p; }
    Json operator()(int64_t Args::*p) const { return args.*p; }
    Json operator()(double Args::*p) const { return args.*p; }
    Json operator()(std::optional<int64_t> Args::*p) const {
      return (args.*p) ? Json(*(args.*p)) : Json(nullptr);
    }
    Json operator()(std::optional<double> Args::*p) const {
      return (args.*p) ? Json(*(args.*p)) : Json(nullptr);
    }
    Json operator()(std::optional<std::string> Args::*p) const {
      return (args.*p) ? Json(*(args.*p)) : Json(nullptr);
    }
    Json operator()(std::optional<bool> Args::*p) const {
      return (args.*p) ? Json(*(args.*p)) : Json(nullptr);
    }
    Json operator()(std::vector<std::string> Args::*p) const { return args.*p; }
  };
  return std::visit(Visitor{args}, ptr);
}

void set_field_text(Args& args, const Field& field, std::string_view text) {
  const std::string_view name = field.name;
  struct Visitor {
    Args& args;
    std::string_view name, text;
    void operator()(std::string Args::*p) const { args.*p = std::string(text); }
    void operator()(bool Args::*p) const { args.*p = parse_bool(name, text); }
    void operator()(int64_t Args::*p) const { args.*p = parse_int(name, text); }
    void operator()(double Args::*p) const { args.*p = parse_double(name, text); }
    void operator()(std::optional<int64_t> Args::*p) const {
      args.*p = is_unset_text(text) ? std::nullopt : std::optional<int64_t>(parse_int(name, text));
    }
    void operator()(std::optional<double> Args::*p) const {
      args.*p = is_unset_text(text) ? std::nullopt : std::optional<double>(parse_double(name, text));
    }
    void operator()(std::optional<std::string> Args::*p) const {
      args.*p = is_unset_text(text) ? std::nullopt : std::optional<std::string>(std::string(text));
    }
    void operator()(std::optional<bool> Args::*p) const {
      args.*p = is_unset_text(text) ? std::nullopt : std::optional<bool>(parse_bool(name, text));
    }
    void operator()(std::vector<std::string> Args::*p) const { args.*p = parse_argument_list(text); }
  };
  std::visit(Visitor{args, name, text}, field.ptr);
}

void set_field_json(Args& args, const Field& field, const Json& value, const std::string& source) {
  struct Visitor {
    Args& args;
    std::string_view name;
    const Json& value;
    const std::string& source;
    std::string string_value() const {
      if (!value.is_string()) bad_json(source, name, "a string", value);
      return value.get<std::string>();
    }
    bool bool_value() const {
      if (!value.is_boolean()) bad_json(source, name, "true or false", value);
      return value.get<bool>();
    }
    void operator()(std::string Args::*p) const { args.*p = string_value(); }
    void operator()(bool Args::*p) const { args.*p = bool_value(); }
    void operator()(int64_t Args::*p) const { args.*p = json_int(source, name, value); }
    void operator()(double Args::*p) const { args.*p = json_double(source, name, value); }
    void operator()(std::optional<int64_t> Args::*p) const {
      args.*p = value.is_null() ? std::nullopt : std::optional<int64_t>(json_int(source, name, value));
    }
    void operator()(std::optional<double> Args::*p) const {
      args.*p = value.is_null() ? std::nullopt : std::optional<double>(json_double(source, name, value));
    }
    void operator()(std::optional<std::string> Args::*p) const {
      args.*p = value.is_null() ? std::nullopt : std::optional<std::string>(string_value());
    }
    void operator()(std::optional<bool> Args::*p) const {
      args.*p = value.is_null() ? std::nullopt : std::optional<bool>(bool_value());
    }
    void operator()(std::vector<std::string> Args::*p) const {
      // HF accepts a single string for its list fields (report_to="none").
      if (value.is_string()) {
        args.*p = parse_argument_list(value.get<std::string>());
        return;
      }
      if (!value.is_array()) bad_json(source, name, "a list of strings", value);
      std::vector<std::string> items;
      for (const Json& item : value) {
        if (!item.is_string()) bad_json(source, name, "a list of strings", value);
        items.push_back(item.get<std::string>());
      }
      args.*p = std::move(items);
    }
  };
  std::visit(Visitor{args, field.name, value, source}, field.ptr);
}

// The field's value against its entry's rule (see Rule).
void check_field_rule(const TrainingArguments& args, const Field& field) {
  const std::string_view name = field.name;
  const Rule& rule = field.rule;
  if (const auto* range = std::get_if<Range>(&rule)) {
    const std::optional<double> value = std::visit(NumberValue{args}, field.ptr);
    if (value && !in_range(*range, *value))
      BERTH_FAIL("training argument ", name, " must be ", range_text(*range), ", found ",
                 field_text(args, field.ptr), ". Fix: e.g. ", range->example);
  } else if (std::holds_alternative<StepsValue>(rule)) {
    if (const std::optional<double> value = std::visit(NumberValue{args}, field.ptr))
      check_steps_value(name, *value);
  } else if (const auto* one_of = std::get_if<OneOf>(&rule)) {
    for (const std::string& value : std::visit(TextValues{args}, field.ptr))
      check_one_of(name, one_of->any_case ? text::to_lower(value) : value, one_of->words);
  } else if (const auto* not_empty = std::get_if<NotEmpty>(&rule)) {
    for (const std::string& value : std::visit(TextValues{args}, field.ptr))
      if ((not_empty->blank_is_empty ? text::trim(value) : std::string_view(value)).empty())
        BERTH_FAIL("training argument ", name, " must ", not_empty->must,
                   ", found an empty string. Fix: e.g. ", not_empty->example);
  } else if (const auto* checked = std::get_if<Checked>(&rule)) {
    for (const std::string& value : std::visit(TextValues{args}, field.ptr)) checked->check(name, value);
  }
}

std::vector<std::string> parse_argument_list(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item(text::trim(text.substr(start, comma - start)));
    if (!item.empty()) items.push_back(std::move(item));
    start = comma + 1;
  }
  return items;
}

[[noreturn]] void bad_json(const std::string& source, std::string_view name, const char* expected,
                           const Json& found) {
  BERTH_FAIL(source, ": \"", name, "\" must be ", expected, ", found ", found.dump(),
             ". Fix: write it as in the defaults, e.g. berth's own training_args.json");
}

bool is_foreign_integration(const std::string& name) {
  const auto& names = foreign_integrations();
  return std::find(names.begin(), names.end(), text::to_lower(name)) != names.end();
}

void check_not_foreign(const std::string& item) {
  BERTH_CHECK(!is_foreign_integration(item), "report_to: berth has no ", item,
              " integration; it reports to jsonl (output_dir/log.jsonl), tensorboard (event files in "
              "output_dir/runs/) "
              "or none. Fix: report_to jsonl");
}

}  // namespace berth::train::detail
