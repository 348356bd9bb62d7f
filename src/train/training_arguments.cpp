// TrainingArguments: the field registry, text and JSON parsing, HF's validation rules, and its JSON file.
#include "berth/train/training_arguments.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <variant>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/placement/place.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/unsupported_hf_arguments.h"
#include "core/number_text.h"
#include "core/text.h"

namespace berth::train {
namespace {

using Args = TrainingArguments;
using Json = nlohmann::json;

// One pointer-to-member per field type; the variant index is the field's type.
using FieldPtr = std::variant<std::string Args::*, bool Args::*, int64_t Args::*, double Args::*,
                              std::optional<int64_t> Args::*, std::optional<double> Args::*,
                              std::optional<std::string> Args::*, std::optional<bool> Args::*,
                              std::vector<std::string> Args::*>;

struct Field {
  const char* name;
  FieldPtr ptr;
  const char* help;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"output_dir", &Args::output_dir, "Folder for checkpoints, logs and the final model (required)"},
      {"overwrite_output_dir", &Args::overwrite_output_dir, "Train into an output_dir that has content"},
      {"num_train_epochs", &Args::num_train_epochs,
       "Epochs to train (fractions allowed) when max_steps is -1"},
      {"max_steps", &Args::max_steps, "Optimizer steps to train; -1: use num_train_epochs"},
      {"per_device_train_batch_size", &Args::per_device_train_batch_size, "Training batch size per device"},
      {"per_device_eval_batch_size", &Args::per_device_eval_batch_size, "Evaluation batch size per device"},
      {"gradient_accumulation_steps", &Args::gradient_accumulation_steps,
       "Batches whose gradients add up to one optimizer step"},
      {"learning_rate", &Args::learning_rate, "Peak learning rate of AdamW"},
      {"weight_decay", &Args::weight_decay, "AdamW weight decay (not on biases and LayerNorm weights)"},
      {"adam_beta1", &Args::adam_beta1, "AdamW beta1"},
      {"adam_beta2", &Args::adam_beta2, "AdamW beta2"},
      {"adam_epsilon", &Args::adam_epsilon, "AdamW epsilon"},
      {"max_grad_norm", &Args::max_grad_norm, "Clip the gradient norm to this; 0: no clipping"},
      {"lr_scheduler_type", &Args::lr_scheduler_type,
       "linear, cosine, constant, constant_with_warmup or polynomial"},
      {"warmup_ratio", &Args::warmup_ratio,
       "Warmup as a fraction of the total steps (when warmup_steps is 0)"},
      {"warmup_steps", &Args::warmup_steps, "Warmup steps; > 0 overrides warmup_ratio"},
      {"logging_strategy", &Args::logging_strategy, "When to log: no, steps or epoch"},
      {"logging_first_step", &Args::logging_first_step, "Also log after the first step"},
      {"logging_steps", &Args::logging_steps, "Log every N steps; below 1: a fraction of the total steps"},
      {"eval_strategy", &Args::eval_strategy, "When to evaluate: no, steps or epoch"},
      {"eval_steps", &Args::eval_steps,
       "Evaluate every N steps with eval_strategy=steps; unset: logging_steps; below 1: a fraction"},
      {"save_strategy", &Args::save_strategy, "When to save a checkpoint: no, steps, epoch or best"},
      {"save_steps", &Args::save_steps, "Save every N steps with save_strategy=steps; below 1: a fraction"},
      {"save_total_limit", &Args::save_total_limit, "Keep at most N checkpoints (the best one is kept too)"},
      {"load_best_model_at_end", &Args::load_best_model_at_end,
       "Load the best checkpoint at the end (needs save_strategy = eval_strategy)"},
      {"metric_for_best_model", &Args::metric_for_best_model,
       "Metric that picks the best checkpoint, e.g. f1; unset with load_best_model_at_end: loss"},
      {"greater_is_better", &Args::greater_is_better,
       "Whether a larger metric is better; unset: false for *loss metrics, else true"},
      {"seed", &Args::seed, "Seed for model initialization and everything else random"},
      {"data_seed", &Args::data_seed, "Seed for data shuffling; unset: seed"},
      {"dataloader_drop_last", &Args::dataloader_drop_last, "Drop the last incomplete training batch"},
      {"group_by_length", &Args::group_by_length,
       "Shuffle in megabatches sorted by length, so that training batches pad little"},
      {"resume_from_checkpoint", &Args::resume_from_checkpoint,
       "Resume from this checkpoint folder, or 'latest' for the newest in output_dir"},
      {"report_to", &Args::report_to, "Where to report logs: jsonl (output_dir/log.jsonl), all or none"},
      {"disable_tqdm", &Args::disable_tqdm, "No progress bar"},
      {"ddp_backend", &Args::ddp_backend,
       "Process-group backend: gloo, nccl or mpi; unset: nccl on CUDA, else gloo"},
      {"ddp_bucket_cap_mb", &Args::ddp_bucket_cap_mb, "Size of DDP's gradient buckets in MB; unset: 25"},
      {"ddp_find_unused_parameters", &Args::ddp_find_unused_parameters,
       "Allow parameters that get no gradient under DDP; unset: false (they are an error naming them)"},
      {"ddp_timeout", &Args::ddp_timeout, "Seconds a collective may take before it fails naming the ranks"},
      {"rendezvous", &Args::rendezvous,
       "Where ranks meet: env (MASTER_ADDR/MASTER_PORT), file://PATH or tcp://HOST:PORT"},
      {"fp16", &Args::fp16, "fp16 mixed precision (fp32 master weights, dynamic loss scaling)"},
      {"bf16", &Args::bf16, "bf16 mixed precision (fp32 master weights)"},
      {"deepspeed", &Args::deepspeed,
       "DeepSpeed JSON config file (zero_optimization, fp16/bf16, optimizer, scheduler, batch sizes)"},
      {"fsdp", &Args::fsdp,
       "HF's FSDP options, space-separated: full_shard (ZeRO-3), shard_grad_op (ZeRO-2), no_shard, offload, "
       "auto_wrap; empty: off"},
      {"device", &Args::device, "auto, cpu, cuda or cuda:N"},
      {"placement", &Args::placement, "move (put the model on the device) or strict (it must be there)"},
      {"threads", &Args::threads, "CPU threads for torch; 0: berth's default"},
      {"max_length", &Args::max_length, "Tokenizer truncation length in tokens"},
      {"truncation_keep_head", &Args::truncation_keep_head,
       "Head+tail truncation: a longer text keeps its first N tokens and the rest from its end (the "
       "middle dropped); unset: the end is cut off, as HF does"},
      {"dataloader_prefetch", &Args::dataloader_prefetch, "Batches the data loader prepares ahead"},
  };
  return table;
}

const char* type_name(const FieldPtr& ptr) {
  static const char* const names[] = {"string", "bool",    "int",   "float", "int?",
                                      "float?", "string?", "bool?", "list"};
  return names[ptr.index()];
}

const Field* find_field(std::string_view name) {
  for (const Field& field : fields())
    if (name == field.name) return &field;
  return nullptr;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
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
    std::string operator()(std::vector<std::string> Args::*p) const { return join(args.*p, ","); }
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

std::string trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

[[noreturn]] void bad_text(std::string_view name, std::string_view text, const char* expected,
                           const char* example) {
  BERTH_FAIL("training argument ", name, " expects ", expected, ", found '", text, "'. Fix: e.g. ", name, " ",
             example);
}

int64_t parse_int(std::string_view name, std::string_view text) {
  const std::string s = trim(text);
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad_text(name, text, "a whole number", "10");
  return value;
}

double parse_double(std::string_view name, std::string_view text) {
  const std::string s = trim(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value))
    bad_text(name, text, "a finite number", "0.5");
  return value;
}

bool parse_bool(std::string_view name, std::string_view text) {
  const std::string s = text::to_lower(trim(text));
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no") return false;
  bad_text(name, text, "true/false/1/0/yes/no", "true");
}

bool is_unset_text(std::string_view text) {
  const std::string s = text::to_lower(trim(text));
  return s == "none" || s == "null";
}

std::vector<std::string> parse_list(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = trim(text.substr(start, comma - start));
    if (!item.empty()) items.push_back(std::move(item));
    start = comma + 1;
  }
  return items;
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
    void operator()(std::vector<std::string> Args::*p) const { args.*p = parse_list(text); }
  };
  std::visit(Visitor{args, name, text}, field.ptr);
}

[[noreturn]] void bad_json(const std::string& source, std::string_view name, const char* expected,
                           const Json& found) {
  BERTH_FAIL(source, ": \"", name, "\" must be ", expected, ", found ", found.dump(),
             ". Fix: write it as in the defaults, e.g. berth's own training_args.json");
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
        args.*p = parse_list(value.get<std::string>());
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

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_name(std::string_view name, const char* where) {
  const std::string suggestion = closest_training_argument(name);
  BERTH_FAIL("unknown training argument '", name, "'", where,
             suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?",
             ". Fix: use one of berth's training arguments (berth train --help lists them)");
}

// HF's integrations that berth lacks; in report_to they are errors on the command line and ignored with a
// warning in a JSON file (HF's own files name them).
const std::vector<std::string>& foreign_integrations() {
  static const std::vector<std::string> names = {
      "azure_ml", "clearml", "codecarbon", "comet_ml",    "dagshub", "dvclive", "flyte",
      "mlflow",   "neptune", "ray",        "tensorboard", "wandb",   "swanlab"};
  return names;
}

bool is_foreign_integration(const std::string& name) {
  const auto& names = foreign_integrations();
  return std::find(names.begin(), names.end(), text::to_lower(name)) != names.end();
}

void check_one_of(std::string_view name, const std::string& value, const std::vector<std::string>& accepted) {
  if (std::find(accepted.begin(), accepted.end(), value) != accepted.end()) return;
  BERTH_FAIL("training argument ", name, " must be one of ", join(accepted, ", "), ", found '", value,
             "'. Fix: e.g. ", name, " ", accepted.front());
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

int64_t resolve_steps(double value, int64_t total_steps) {
  if (value < 1) return static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * value));
  return static_cast<int64_t>(value);
}

}  // namespace

const std::vector<ArgumentSpec>& training_argument_specs() {
  static const std::vector<ArgumentSpec> specs = [] {
    const Args defaults;
    std::vector<ArgumentSpec> out;
    for (const Field& field : fields())
      out.push_back({field.name, type_name(field.ptr), field_text(defaults, field.ptr), field.help});
    return out;
  }();
  return specs;
}

std::optional<std::string> training_argument_alias_target(std::string_view name) {
  if (name == "evaluation_strategy") return std::string("eval_strategy");
  return std::nullopt;
}

std::string closest_training_argument(std::string_view name) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  const std::string wanted = text::to_lower(name);
  for (const Field& field : fields()) {
    const size_t distance = edit_distance(wanted, field.name);
    if (distance < best_distance) best_distance = distance, best = field.name;
  }
  // A name that shares little with every field gets no hint: a wild guess misleads more than it helps.
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  return best_distance <= limit ? best : std::string();
}

void set_training_argument(TrainingArguments& args, std::string_view name, std::string_view value_text) {
  std::string canonical(name);
  if (auto target = training_argument_alias_target(name)) canonical = *target;
  const Field* field = find_field(canonical);
  if (!field) {
    if (is_unsupported_hf_training_argument(name)) refuse_unsupported_hf_training_argument(name);
    unknown_name(name, "");
  }
  if (canonical == "report_to") {
    for (const std::string& item : parse_list(value_text))
      BERTH_CHECK(!is_foreign_integration(item), "report_to: berth has no ", item,
                  " integration; it reports to jsonl (output_dir/log.jsonl) or none. Fix: report_to jsonl");
  }
  set_field_text(args, *field, value_text);
}

void merge_training_arguments_json(TrainingArguments& args, const std::string& json_text,
                                   const std::string& source, std::vector<std::string>* warnings) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    BERTH_FAIL(source, " is not valid JSON (", e.what(),
               "). Fix: write one JSON object of training arguments");
  }
  BERTH_CHECK(root.is_object(), source, " must hold one JSON object of training arguments, found ",
              root.type_name(), ". Fix: e.g. {\"learning_rate\": 2e-5}");
  std::vector<std::string> ignored;
  std::optional<std::string> old_eval_strategy;
  for (const auto& [key, value] : root.items()) {
    if (key == "evaluation_strategy") {
      // HF 4.4x writes the deprecated name as null beside eval_strategy; a value wins, as in HF's post_init.
      if (!value.is_null()) {
        if (!value.is_string()) bad_json(source, key, "a string", value);
        old_eval_strategy = value.get<std::string>();
      }
      continue;
    }
    // HF's own training_args.json writes fsdp as a list of options and deepspeed may be an inline dict.
    if (key == "fsdp" && value.is_array()) {
      std::vector<std::string> options;
      for (const Json& item : value) {
        if (!item.is_string()) bad_json(source, key, "a string of space-separated options", value);
        options.push_back(item.get<std::string>());
      }
      args.fsdp = join(options, " ");
      continue;
    }
    if (key == "deepspeed" && value.is_object()) {
      args.deepspeed = value.dump();
      continue;
    }
    // transformers 5 writes fsdp as null when off, and as true with its options moved to fsdp_config.
    if (key == "fsdp" && (value.is_null() || value == false)) {
      args.fsdp.clear();
      continue;
    }
    if (key == "fsdp" && value == true)
      BERTH_FAIL(source,
                 ": \"fsdp\" is true, as transformers 5 writes it with the options in \"fsdp_config\", which "
                 "berth does not read. Fix: write berth's space-separated options instead, e.g. \"fsdp\": "
                 "\"full_shard\"");
    // transformers 5 has no warmup_ratio: a warmup_steps below 1 is the ratio of the total steps.
    if (key == "warmup_steps" && value.is_number_float() && value.get<double>() > 0 &&
        value.get<double>() < 1) {
      args.warmup_ratio = value.get<double>();
      args.warmup_steps = 0;
      continue;
    }
    // transformers 5's train_sampling_strategy replaces group_by_length.
    if (key == "train_sampling_strategy") {
      if (!value.is_string()) bad_json(source, key, "a string", value);
      const std::string strategy = value.get<std::string>();
      BERTH_CHECK(
          strategy == "random" || strategy == "group_by_length", source,
          ": \"train_sampling_strategy\" must be \"random\" or \"group_by_length\" (the samplers berth "
          "has), found \"",
          strategy, "\". Fix: use one of those; berth always shuffles its training batches");
      if (strategy == "group_by_length") args.group_by_length = true;
      continue;
    }
    const Field* field = find_field(key);
    if (!field) {
      // Keys with a leading underscore are HF's private fields (_n_gpu), never the user's settings.
      if (key.rfind('_', 0) == 0) continue;
      if (is_unsupported_hf_training_argument(key)) {
        ignored.push_back(key);
        continue;
      }
      unknown_name(key, (" in " + source).c_str());
    }
    set_field_json(args, *field, value, source);
  }
  if (old_eval_strategy) args.eval_strategy = *old_eval_strategy;
  std::vector<std::string> dropped;
  std::vector<std::string> kept;
  for (const std::string& item : args.report_to)
    (is_foreign_integration(item) ? dropped : kept).push_back(item);
  if (!dropped.empty()) {
    args.report_to = kept.empty() ? std::vector<std::string>{"jsonl"} : kept;
    if (warnings)
      warnings->push_back(source + ": report_to " + join(dropped, ", ") +
                          " ignored (berth has no such integration); reporting to " +
                          join(args.report_to, ", "));
  }
  if (!ignored.empty() && warnings)
    warnings->push_back(ignored_hf_training_arguments_warning(source, ignored));
}

std::string TrainingArguments::to_json_text() const {
  Json root = Json::object();  // nlohmann's object is a std::map: keys come out sorted
  for (const Field& field : fields()) root[field.name] = field_json(*this, field.ptr);
  return root.dump(2) + "\n";
}

TrainingArguments TrainingArguments::from_json_text(const std::string& text, const std::string& source,
                                                    std::vector<std::string>* warnings) {
  TrainingArguments args;
  merge_training_arguments_json(args, text, source, warnings);
  args.validate();
  return args;
}

void TrainingArguments::save(const std::string& path) const { write_file_atomically(path, to_json_text()); }

TrainingArguments TrainingArguments::load(const std::string& path, std::vector<std::string>* warnings) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in, "cannot read training arguments from ", path,
              ": no such file or not readable. Fix: pass a training_args.json written by berth or HF");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return from_json_text(text, path, warnings);
}

void TrainingArguments::validate() const {
  const auto positive_int = [](const char* name, int64_t value) {
    BERTH_CHECK(value >= 1, "training argument ", name, " must be >= 1, found ", value, ". Fix: e.g. ", name,
                " 8");
  };
  BERTH_CHECK(learning_rate >= 0 && std::isfinite(learning_rate),
              "training argument learning_rate must be >= 0 (0 freezes the weights, as HF allows), found ",
              text::shortest_number_text(learning_rate), ". Fix: e.g. learning_rate 5e-5");
  BERTH_CHECK(weight_decay >= 0, "training argument weight_decay must be >= 0, found ",
              text::shortest_number_text(weight_decay), ". Fix: e.g. weight_decay 0.01");
  for (const auto& [name, value] : {std::pair{"adam_beta1", adam_beta1}, std::pair{"adam_beta2", adam_beta2}})
    BERTH_CHECK(value >= 0 && value < 1, "training argument ", name, " must be in [0, 1), found ",
                text::shortest_number_text(value), ". Fix: e.g. adam_beta1 0.9, adam_beta2 0.999");
  BERTH_CHECK(adam_epsilon > 0, "training argument adam_epsilon must be > 0, found ",
              text::shortest_number_text(adam_epsilon), ". Fix: e.g. adam_epsilon 1e-8");
  BERTH_CHECK(max_grad_norm >= 0, "training argument max_grad_norm must be >= 0 (0: no clipping), found ",
              text::shortest_number_text(max_grad_norm), ". Fix: e.g. max_grad_norm 1.0");
  positive_int("per_device_train_batch_size", per_device_train_batch_size);
  positive_int("per_device_eval_batch_size", per_device_eval_batch_size);
  positive_int("gradient_accumulation_steps", gradient_accumulation_steps);
  BERTH_CHECK(max_steps == -1 || max_steps > 0,
              "training argument max_steps must be -1 (use num_train_epochs) or > 0, found ", max_steps,
              ". Fix: e.g. max_steps 1000");
  BERTH_CHECK(max_steps > 0 || num_train_epochs > 0,
              "training argument num_train_epochs must be > 0 when max_steps is -1, found ",
              text::shortest_number_text(num_train_epochs),
              ". Fix: e.g. num_train_epochs 3, or set max_steps");
  check_one_of("lr_scheduler_type", lr_scheduler_type,
               {"linear", "cosine", "constant", "constant_with_warmup", "polynomial"});
  BERTH_CHECK(warmup_ratio >= 0 && warmup_ratio <= 1,
              "training argument warmup_ratio must be in [0, 1], found ",
              text::shortest_number_text(warmup_ratio), ". Fix: e.g. warmup_ratio 0.1");
  BERTH_CHECK(warmup_steps >= 0, "training argument warmup_steps must be >= 0, found ", warmup_steps,
              ". Fix: e.g. warmup_steps 100");
  check_one_of("logging_strategy", logging_strategy, {"steps", "no", "epoch"});
  check_one_of("eval_strategy", eval_strategy, {"no", "steps", "epoch"});
  check_one_of("save_strategy", save_strategy, {"steps", "no", "epoch", "best"});
  check_steps_value("logging_steps", logging_steps);
  check_steps_value("save_steps", save_steps);
  if (eval_steps) check_steps_value("eval_steps", *eval_steps);
  BERTH_CHECK(logging_strategy != "steps" || logging_steps > 0,
              "training argument logging_strategy=steps needs logging_steps > 0, found ",
              text::shortest_number_text(logging_steps),
              ". Fix: e.g. logging_steps 50, or logging_strategy no");
  BERTH_CHECK(save_strategy != "steps" || save_steps > 0,
              "training argument save_strategy=steps needs save_steps > 0, found ",
              text::shortest_number_text(save_steps), ". Fix: e.g. save_steps 500, or save_strategy no");
  if (eval_strategy == "steps")
    BERTH_CHECK((eval_steps && *eval_steps > 0) || logging_steps > 0,
                "training argument eval_strategy=steps needs eval_steps > 0, or logging_steps > 0 to default "
                "to, found eval_steps ",
                eval_steps ? text::shortest_number_text(*eval_steps) : "unset", " and logging_steps ",
                text::shortest_number_text(logging_steps), ". Fix: e.g. eval_steps 500");
  if (save_total_limit)
    BERTH_CHECK(*save_total_limit >= 1, "training argument save_total_limit must be >= 1 when set, found ",
                *save_total_limit,
                ". Fix: e.g. save_total_limit 2, or leave it unset to keep every checkpoint");
  if (load_best_model_at_end && save_strategy != "best") {
    BERTH_CHECK(eval_strategy == save_strategy,
                "load_best_model_at_end requires the save and eval strategy to match, found eval_strategy '",
                eval_strategy, "' and save_strategy '", save_strategy, "'. Fix: e.g. eval_strategy ",
                save_strategy == "no" ? "steps" : save_strategy, " with save_strategy ",
                save_strategy == "no" ? "steps" : save_strategy);
    if (eval_strategy == "steps") {
      const double every = eval_steps && *eval_steps > 0 ? *eval_steps : logging_steps;
      // HF: both ratios or both step counts; compared on a fine integer grid so 0.2 / 0.1 is a multiple.
      BERTH_CHECK((every < 1) == (save_steps < 1),
                  "load_best_model_at_end with eval_strategy=steps needs save_steps and eval_steps both as "
                  "ratios (< 1) or both as step counts, found save_steps ",
                  text::shortest_number_text(save_steps), " and eval_steps ",
                  text::shortest_number_text(every), ". Fix: write both as step counts");
      const auto grid = [](double v) { return static_cast<int64_t>(std::llround(v * 1e6)); };
      BERTH_CHECK(grid(every) > 0 && grid(save_steps) % grid(every) == 0,
                  "load_best_model_at_end requires save_steps to be a round multiple of eval_steps, found "
                  "save_steps ",
                  text::shortest_number_text(save_steps), " and eval_steps ",
                  text::shortest_number_text(every), ". Fix: e.g. save_steps ",
                  text::shortest_number_text(every));
    }
  }
  if (save_strategy == "best")
    BERTH_CHECK(
        resolved_metric_for_best_model().has_value(),
        "save_strategy=best needs metric_for_best_model, found it unset. Fix: e.g. metric_for_best_model "
        "f1, or load_best_model_at_end true (which defaults it to loss)");
  if (metric_for_best_model)
    BERTH_CHECK(
        !trim(*metric_for_best_model).empty(),
        "training argument metric_for_best_model must name a metric, found an empty string. Fix: e.g. "
        "metric_for_best_model f1, or leave it unset");
  for (const std::string& item : report_to) {
    BERTH_CHECK(!is_foreign_integration(item), "report_to: berth has no ", item,
                " integration; it reports to jsonl (output_dir/log.jsonl) or none. Fix: report_to jsonl");
    check_one_of("report_to", text::to_lower(item), {"jsonl", "none", "all"});
  }
  BERTH_CHECK(
      !resume_from_checkpoint || !resume_from_checkpoint->empty(),
      "training argument resume_from_checkpoint must be a checkpoint folder or 'latest', found an empty "
      "string. Fix: e.g. resume_from_checkpoint latest, or leave it unset");
  try {
    parse_device(device);
  } catch (const Error& e) {
    BERTH_FAIL("training argument device: ", e.what());
  }
  try {
    parse_placement_policy(placement);
  } catch (const Error& e) {
    BERTH_FAIL("training argument placement: ", e.what());
  }
  BERTH_CHECK(threads >= 0, "training argument threads must be >= 0 (0: berth's default), found ", threads,
              ". Fix: e.g. threads 4");
  BERTH_CHECK(max_length >= 2, "training argument max_length must be >= 2 ([CLS] and [SEP]), found ",
              max_length, ". Fix: e.g. max_length 128");
  if (truncation_keep_head)
    BERTH_CHECK(*truncation_keep_head >= 0 && *truncation_keep_head <= max_length - 2,
                "training argument truncation_keep_head must be between 0 and max_length - 2 = ",
                max_length - 2, " (the tokens left after [CLS] and [SEP]), found ", *truncation_keep_head,
                ". Fix: e.g. truncation_keep_head ", (max_length - 2) / 2,
                " keeps the first half and the end of long texts; leave it unset to cut off the end");
  BERTH_CHECK(dataloader_prefetch >= 0, "training argument dataloader_prefetch must be >= 0, found ",
              dataloader_prefetch, ". Fix: e.g. dataloader_prefetch 2");
  if (ddp_backend) check_one_of("ddp_backend", text::to_lower(*ddp_backend), {"gloo", "nccl", "mpi"});
  if (ddp_bucket_cap_mb)
    BERTH_CHECK(*ddp_bucket_cap_mb > 0, "training argument ddp_bucket_cap_mb must be > 0, found ",
                *ddp_bucket_cap_mb, ". Fix: e.g. ddp_bucket_cap_mb 25, or leave it unset");
  BERTH_CHECK(ddp_timeout > 0, "training argument ddp_timeout must be > 0 seconds, found ", ddp_timeout,
              ". Fix: e.g. ddp_timeout 1800");
  BERTH_CHECK(
      rendezvous == "env" || rendezvous.rfind("file://", 0) == 0 || rendezvous.rfind("tcp://", 0) == 0,
      "training argument rendezvous must be env, file://PATH or tcp://HOST:PORT, found '", rendezvous,
      "'. Fix: e.g. rendezvous file:///shared/berth-rdzv (a path every rank can reach)");
  BERTH_CHECK(
      !(fp16 && bf16),
      "training arguments fp16 and bf16 are both true; a run trains in one precision. Fix: keep one of "
      "--fp16 and --bf16");
  BERTH_CHECK(
      !(deepspeed && !trim(fsdp).empty()), "training arguments deepspeed ('", *deepspeed, "') and fsdp ('",
      fsdp,
      "') are both set; they are two ways to configure the same sharding. Fix: keep one of --deepspeed "
      "and --fsdp");
  BERTH_CHECK(
      !deepspeed || !trim(*deepspeed).empty(),
      "training argument deepspeed must be a DeepSpeed JSON config file, found an empty string. Fix: e.g. "
      "deepspeed ds_config.json, or leave it unset");
  try {
    zero_options_from_fsdp(fsdp);
  } catch (const Error& e) {
    BERTH_FAIL("training argument fsdp: ", e.what());
  }
}

int64_t TrainingArguments::resolved_warmup_steps(int64_t total_steps) const {
  if (warmup_steps > 0) return warmup_steps;
  return static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * warmup_ratio));
}

int64_t TrainingArguments::resolved_logging_steps(int64_t total_steps) const {
  return resolve_steps(logging_steps, total_steps);
}

int64_t TrainingArguments::resolved_eval_steps(int64_t total_steps) const {
  return resolve_steps(eval_steps && *eval_steps > 0 ? *eval_steps : logging_steps, total_steps);
}

int64_t TrainingArguments::resolved_save_steps(int64_t total_steps) const {
  return resolve_steps(save_steps, total_steps);
}

std::optional<std::string> TrainingArguments::resolved_metric_for_best_model() const {
  if (metric_for_best_model) return metric_for_best_model;
  if (load_best_model_at_end) return std::string("loss");
  return std::nullopt;
}

bool TrainingArguments::metric_greater_is_better() const {
  if (greater_is_better) return *greater_is_better;
  const std::string metric = resolved_metric_for_best_model().value_or("loss");
  const std::string suffix = "loss";
  return !(metric.size() >= suffix.size() &&
           metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0);
}

std::string TrainingArguments::best_metric_key() const {
  const auto metric = resolved_metric_for_best_model();
  BERTH_CHECK(metric.has_value(),
              "no metric picks the best model: metric_for_best_model is unset and load_best_model_at_end is "
              "false. Fix: set metric_for_best_model (e.g. f1) or load_best_model_at_end true");
  return metric->rfind("eval_", 0) == 0 ? *metric : "eval_" + *metric;
}

std::vector<std::string> TrainingArguments::resolved_report_to() const {
  std::set<std::string> out;
  for (const std::string& item : report_to) {
    const std::string name = text::to_lower(item);
    if (name == "jsonl" || name == "all") out.insert("jsonl");
  }
  // "none" anywhere wins, as in HF.
  for (const std::string& item : report_to)
    if (text::to_lower(item) == "none") return {};
  return {out.begin(), out.end()};
}

int64_t TrainingArguments::resolved_data_seed() const { return data_seed.value_or(seed); }

}  // namespace berth::train
