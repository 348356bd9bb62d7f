// TrainingArguments: its names on the command line and in HF's JSON files, HF's rules between fields, its
// JSON file and the values resolved once a run's length is known.
#include "berth/train/training_arguments.h"
#include "berth/core/input_file.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/optim/scheduler_kwargs.h"
#include "berth/train/unsupported_hf_arguments.h"
#include "core/number_text.h"
#include "core/text.h"
#include "core/utf8_check.h"
#include "train/training_argument_fields.h"

namespace berth::train {
namespace {

using Args = TrainingArguments;
using Json = nlohmann::json;
using detail::Field;

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

int64_t resolve_steps(double value, int64_t total_steps) {
  if (value < 1) return static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * value));
  return static_cast<int64_t>(value);
}

// The step counts the strategies need: logging and saving every N steps, evaluating every N steps.
void check_strategy_steps(const Args& args) {
  BERTH_CHECK(args.logging_strategy != "steps" || args.logging_steps > 0,
              "training argument logging_strategy=steps needs logging_steps > 0, found ",
              text::shortest_number_text(args.logging_steps),
              ". Fix: e.g. logging_steps 50, or logging_strategy no");
  BERTH_CHECK(args.save_strategy != "steps" || args.save_steps > 0,
              "training argument save_strategy=steps needs save_steps > 0, found ",
              text::shortest_number_text(args.save_steps), ". Fix: e.g. save_steps 500, or save_strategy no");
  if (args.eval_strategy == "steps")
    BERTH_CHECK((args.eval_steps && *args.eval_steps > 0) || args.logging_steps > 0,
                "training argument eval_strategy=steps needs eval_steps > 0, or logging_steps > 0 to default "
                "to, found eval_steps ",
                args.eval_steps ? text::shortest_number_text(*args.eval_steps) : "unset",
                " and logging_steps ", text::shortest_number_text(args.logging_steps),
                ". Fix: e.g. eval_steps 500");
}

// HF's load_best_model_at_end rules: the best checkpoint must be one that was evaluated.
void check_best_model(const Args& args) {
  const std::string& save = args.save_strategy;
  if (args.load_best_model_at_end && save != "best") {
    BERTH_CHECK(args.eval_strategy == save,
                "load_best_model_at_end requires the save and eval strategy to match, found eval_strategy '",
                args.eval_strategy, "' and save_strategy '", save, "'. Fix: e.g. eval_strategy ",
                save == "no" ? "steps" : save, " with save_strategy ", save == "no" ? "steps" : save);
    if (args.eval_strategy == "steps") {
      const double every = args.eval_steps && *args.eval_steps > 0 ? *args.eval_steps : args.logging_steps;
      // HF: both ratios or both step counts; compared on a fine integer grid so 0.2 / 0.1 is a multiple.
      BERTH_CHECK((every < 1) == (args.save_steps < 1),
                  "load_best_model_at_end with eval_strategy=steps needs save_steps and eval_steps both as "
                  "ratios (< 1) or both as step counts, found save_steps ",
                  text::shortest_number_text(args.save_steps), " and eval_steps ",
                  text::shortest_number_text(every), ". Fix: write both as step counts");
      const auto grid = [](double v) { return static_cast<int64_t>(std::llround(v * 1e6)); };
      BERTH_CHECK(grid(every) > 0 && grid(args.save_steps) % grid(every) == 0,
                  "load_best_model_at_end requires save_steps to be a round multiple of eval_steps, found "
                  "save_steps ",
                  text::shortest_number_text(args.save_steps), " and eval_steps ",
                  text::shortest_number_text(every), ". Fix: e.g. save_steps ",
                  text::shortest_number_text(every));
    }
  }
  if (save == "best")
    BERTH_CHECK(
        args.resolved_metric_for_best_model().has_value(),
        "save_strategy=best needs metric_for_best_model, found it unset. Fix: e.g. metric_for_best_model "
        "f1, or load_best_model_at_end true (which defaults it to loss)");
}

// The schedule's kwargs by its names (HF would raise a TypeError at the first step), and HF's rule that
// reduce_lr_on_plateau steps on evaluations.
void check_schedule(const Args& args) {
  optim::hf_scheduler_options(args.lr_scheduler_type, 0, 1, args.learning_rate,
                              args.lr_scheduler_kwargs.value_or(""));
  BERTH_CHECK(args.lr_scheduler_type != "reduce_lr_on_plateau" || args.eval_strategy != "no",
              "lr_scheduler_type reduce_lr_on_plateau requires an eval strategy (it lowers the learning rate "
              "when the evaluated metric stops improving), found eval_strategy no. Fix: e.g. --eval_strategy "
              "epoch with an evaluation set");
}

// transformers 5's float warmup_steps (get_warmup_steps): below 1 the ratio of the total steps, else
// int(value) steps, a fraction dropped.
void set_hf_warmup_steps(Args& args, double value, const std::string& source) {
  BERTH_CHECK(value >= 0 && std::isfinite(value), source, ": \"warmup_steps\" must be >= 0, found ",
              text::shortest_number_text(value), ". Fix: a step count like 100, or a ratio below 1 like 0.1");
  if (value > 0 && value < 1) {
    args.warmup_ratio = value;
    args.warmup_steps = 0;
    return;
  }
  args.warmup_steps = static_cast<int64_t>(value);
  args.warmup_ratio = 0;
}

// A JSON file's keys that are no training argument of berth's or HF's: one warning line, each with the
// closest name berth knows.
std::string unknown_keys_warning(const std::string& source, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  for (std::string& name : names) {
    const std::string suggestion = closest_training_argument(name);
    if (!suggestion.empty()) name += " (did you mean '" + suggestion + "'?)";
  }
  return source + ": ignored " + std::to_string(names.size()) +
         " unknown key(s), neither berth's training arguments nor HF transformers': " +
         text::join(names, ", ") + ". Fix: correct or remove them";
}

// HF's own spellings in a JSON file that berth reads differently from its own (evaluation_strategy,
// transformers 5's fsdp, warmup_steps ratio and train_sampling_strategy, an inline deepspeed dict). Returns
// whether `key` was one of them (and so has been applied).
bool merge_hf_spelling(Args& args, const std::string& key, const Json& value, const std::string& source,
                       std::optional<std::string>& old_eval_strategy) {
  if (key == "evaluation_strategy") {
    // HF 4.4x writes the deprecated name as null beside eval_strategy; a value wins, as in HF's post_init.
    if (!value.is_null()) {
      if (!value.is_string()) detail::bad_json(source, key, "a string", value);
      old_eval_strategy = value.get<std::string>();
    }
    return true;
  }
  // HF's own training_args.json writes fsdp as a list of options and deepspeed may be an inline dict.
  if (key == "fsdp" && value.is_array()) {
    std::vector<std::string> options;
    for (const Json& item : value) {
      if (!item.is_string()) detail::bad_json(source, key, "a string of space-separated options", value);
      options.push_back(item.get<std::string>());
    }
    args.fsdp = text::join(options, " ");
    return true;
  }
  if (key == "deepspeed" && value.is_object()) {
    args.deepspeed = value.dump();
    return true;
  }
  // HF writes lr_scheduler_kwargs as the dict itself (a JSON string of one is accepted too, as by HF).
  if (key == "lr_scheduler_kwargs" && value.is_object()) {
    args.lr_scheduler_kwargs = value.dump();
    return true;
  }
  if ((key == "gradient_checkpointing_kwargs" || key == "activation_checkpointing_kwargs") &&
      value.is_object()) {
    args.gradient_checkpointing_kwargs = value.dump();
    return true;
  }
  // transformers 5 writes fsdp as null when off, and as true with its options moved to fsdp_config.
  if (key == "fsdp" && (value.is_null() || value == false)) {
    args.fsdp.clear();
    return true;
  }
  if (key == "fsdp" && value == true)
    BERTH_FAIL(source,
               ": \"fsdp\" is true, as transformers 5 writes it with the options in \"fsdp_config\", which "
               "berth does not read. Fix: write berth's space-separated options instead, e.g. \"fsdp\": "
               "\"full_shard\"");
  // transformers 5 has no warmup_ratio (late 4.x files write it null) and reads warmup_steps as a float.
  if (key == "warmup_ratio" && value.is_null()) return true;
  if (key == "warmup_steps" && value.is_number_float()) {
    set_hf_warmup_steps(args, value.get<double>(), source);
    return true;
  }
  // transformers 5's train_sampling_strategy replaces group_by_length.
  if (key == "train_sampling_strategy") {
    if (!value.is_string()) detail::bad_json(source, key, "a string", value);
    const std::string strategy = value.get<std::string>();
    BERTH_CHECK(strategy == "random" || strategy == "group_by_length", source,
                ": \"train_sampling_strategy\" must be \"random\" or \"group_by_length\" (the samplers berth "
                "has), found \"",
                strategy, "\". Fix: use one of those; berth always shuffles its training batches");
    if (strategy == "group_by_length") args.group_by_length = true;
    return true;
  }
  return false;
}

// report_to items naming HF integrations berth lacks (HF's own files name them) are dropped with a warning,
// "jsonl" reported to when nothing else is left.
void drop_foreign_integrations(Args& args, const std::string& source, std::vector<std::string>* warnings) {
  std::vector<std::string> dropped;
  std::vector<std::string> kept;
  for (const std::string& item : args.report_to)
    (detail::is_foreign_integration(item) ? dropped : kept).push_back(item);
  if (dropped.empty()) return;
  args.report_to = kept.empty() ? std::vector<std::string>{"jsonl"} : kept;
  if (warnings)
    warnings->push_back(source + ": report_to " + text::join(dropped, ", ") +
                        " ignored (berth has no such integration); reporting to " +
                        text::join(args.report_to, ", "));
}

// transformers 5 renamed gradient_checkpointing(_kwargs) to activation_checkpointing(_kwargs) and writes
// both, equal; a file whose two names disagree would mean one thing to HF (the new name wins when set) and be
// a guess here.
void check_checkpointing_names_agree(const Json& root, const std::string& source) {
  for (const char* suffix : {"", "_kwargs"}) {
    const std::string old_name = std::string("gradient_checkpointing") + suffix;
    const std::string new_name = std::string("activation_checkpointing") + suffix;
    if (!root.contains(old_name) || !root.contains(new_name)) continue;
    const Json& old_value = root.at(old_name);
    const Json& new_value = root.at(new_name);
    BERTH_CHECK(old_value.is_null() || new_value.is_null() || old_value == new_value, source, ": \"",
                old_name, "\" is ", old_value.dump(), " but \"", new_name, "\" is ", new_value.dump(),
                ", and they are one setting (", old_name,
                " is its older name). Fix: give both the same value, or remove \"", old_name, "\"");
  }
}

}  // namespace

const std::vector<ArgumentSpec>& training_argument_specs() {
  static const std::vector<ArgumentSpec> specs = [] {
    const Args defaults;
    std::vector<ArgumentSpec> out;
    for (const Field& field : detail::training_argument_fields())
      out.push_back({field.name, detail::field_type_name(field.ptr), detail::field_text(defaults, field.ptr),
                     field.help});
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
  for (const Field& field : detail::training_argument_fields()) {
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
  const Field* field = detail::find_training_argument_field(canonical);
  if (!field) {
    if (is_unsupported_hf_training_argument(name)) refuse_unsupported_hf_training_argument(name);
    unknown_name(name, "");
  }
  // training_args.json is JSON, which holds UTF-8 only.
  if (const std::optional<size_t> bad = text::first_invalid_utf8(value_text))
    BERTH_FAIL("training argument ", canonical, ": expected UTF-8 text, found the byte ",
               text::byte_hex(value_text[*bad]), " at byte ", *bad,
               ". Fix: pass the value as UTF-8 (rename a path that is not)");
  if (canonical == "report_to") {
    for (const std::string& item : detail::parse_argument_list(value_text)) detail::check_not_foreign(item);
  }
  if (canonical == "warmup_steps" && value_text.find_first_of(".eE") != std::string_view::npos) {
    set_hf_warmup_steps(args, detail::parse_double(canonical, value_text), "training argument warmup_steps");
    return;
  }
  detail::set_field_text(args, *field, value_text);
}

void merge_training_arguments_json(TrainingArguments& args, const std::string& json_text,
                                   const std::string& source, std::vector<std::string>* warnings) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    BERTH_FAIL(source, " is not valid JSON (", e.what(),
               "). Fix: write one JSON object of training arguments");
  }
  BERTH_CHECK(root.is_object(), source, " must hold one JSON object of training arguments, found ",
              root.type_name(), ". Fix: e.g. {\"learning_rate\": 2e-5}");
  check_checkpointing_names_agree(root, source);
  std::vector<std::string> ignored, unknown;
  std::optional<std::string> old_eval_strategy;
  for (const auto& [key, value] : root.items()) {
    if (merge_hf_spelling(args, key, value, source, old_eval_strategy)) continue;
    const Field* field = detail::find_training_argument_field(key);
    if (!field) {
      // Keys with a leading underscore are HF's private fields (_n_gpu), never the user's settings.
      if (key.rfind('_', 0) == 0) continue;
      check_ignored_hf_training_argument(source, key, value.dump());
      // A file from another transformers version (or with a typo) loads: its strange keys are a warning.
      (is_unsupported_hf_training_argument(key) ? ignored : unknown).push_back(key);
      continue;
    }
    detail::set_field_json(args, *field, value, source);
  }
  if (old_eval_strategy) args.eval_strategy = *old_eval_strategy;
  drop_foreign_integrations(args, source, warnings);
  if (!ignored.empty() && warnings)
    warnings->push_back(ignored_hf_training_arguments_warning(source, ignored));
  if (!unknown.empty() && warnings) warnings->push_back(unknown_keys_warning(source, unknown));
}

TrainingArguments training_arguments_from_kwargs_json(const std::string& json_object_text) {
  const Json root = Json::parse(json_object_text);
  BERTH_CHECK(root.is_object(), "TrainingArguments takes keyword arguments, found ", root.type_name(),
              ". Fix: TrainingArguments(output_dir=\"out\", learning_rate=2e-5)");
  for (const auto& [key, value] : root.items()) {
    // Unlike a training_args.json from another transformers version, a keyword is the user's own setting:
    // a name berth does not take is refused, as on the command line.
    const std::string canonical = training_argument_alias_target(key).value_or(key);
    if (detail::find_training_argument_field(canonical)) continue;
    if (is_unsupported_hf_training_argument(key)) refuse_unsupported_hf_training_argument(key);
    unknown_name(key, " (a keyword of TrainingArguments)");
  }
  TrainingArguments args;
  merge_training_arguments_json(args, json_object_text, "TrainingArguments(...)");
  args.validate();
  return args;
}

std::string TrainingArguments::to_json_text() const {
  Json root = Json::object();  // nlohmann's object is a std::map: keys come out sorted
  for (const Field& field : detail::training_argument_fields())
    root[field.name] = detail::field_json(*this, field.ptr);
  // As HF writes it: the object, not its text (validate() has checked that it parses).
  if (lr_scheduler_kwargs && !text::trim(*lr_scheduler_kwargs).empty())
    root["lr_scheduler_kwargs"] = Json::parse(*lr_scheduler_kwargs);
  if (gradient_checkpointing_kwargs && !text::trim(*gradient_checkpointing_kwargs).empty()) {
    root["gradient_checkpointing_kwargs"] = Json::parse(*gradient_checkpointing_kwargs);
    root["activation_checkpointing_kwargs"] = root["gradient_checkpointing_kwargs"];
  }
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
  const std::string text =
      read_input_file(path, "training arguments", "pass a training_args.json written by berth or HF");
  return from_json_text(text, path, warnings);
}

// Each field against its table entry's rule, then the rules between fields.
void TrainingArguments::validate() const {
  for (const Field& field : detail::training_argument_fields()) detail::check_field_rule(*this, field);
  BERTH_CHECK(max_steps > 0 || num_train_epochs > 0,
              "training argument num_train_epochs must be > 0 when max_steps is -1, found ",
              text::shortest_number_text(num_train_epochs),
              ". Fix: e.g. num_train_epochs 3, or set max_steps");
  check_strategy_steps(*this);
  check_best_model(*this);
  check_schedule(*this);
  if (truncation_keep_head)
    BERTH_CHECK(
        *truncation_keep_head >= 0, "training argument truncation_keep_head must be >= 0, found ",
        *truncation_keep_head,
        ". Fix: e.g. truncation_keep_head 64 keeps the first 64 tokens and the end of long texts; leave "
        "it unset to cut off the end");
  // Unset, max_length is resolved from the model when a run starts, and validated again there.
  if (truncation_keep_head && max_length)
    BERTH_CHECK(*truncation_keep_head >= 0 && *truncation_keep_head <= *max_length - 2,
                "training argument truncation_keep_head must be between 0 and max_length - 2 = ",
                *max_length - 2, " (the tokens left after [CLS] and [SEP]), found ", *truncation_keep_head,
                ". Fix: e.g. truncation_keep_head ", (*max_length - 2) / 2,
                " keeps the first half and the end of long texts; leave it unset to cut off the end");
  BERTH_CHECK(
      !(fp16 && bf16),
      "training arguments fp16 and bf16 are both true; a run trains in one precision. Fix: keep one of "
      "--fp16 and --bf16");
  BERTH_CHECK(
      !(deepspeed && !text::trim(fsdp).empty()), "training arguments deepspeed ('", *deepspeed,
      "') and fsdp ('", fsdp,
      "') are both set; they are two ways to configure the same sharding. Fix: keep one of --deepspeed "
      "and --fsdp");
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
  if (load_best_model_at_end || lr_scheduler_type == "reduce_lr_on_plateau") return std::string("loss");
  return std::nullopt;
}

bool TrainingArguments::should_save(int64_t rank, int64_t local_rank) const {
  return save_on_each_node ? local_rank == 0 : rank == 0;
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
    if (name == "tensorboard" || name == "all") out.insert("tensorboard");
  }
  // "none" anywhere wins, as in HF.
  for (const std::string& item : report_to)
    if (text::to_lower(item) == "none") return {};
  return {out.begin(), out.end()};
}

int64_t TrainingArguments::checkpoint_every_n_layers() const {
  if (!gradient_checkpointing_kwargs || text::trim(*gradient_checkpointing_kwargs).empty()) return 1;
  const Json kwargs = Json::parse(*gradient_checkpointing_kwargs);  // validate() has checked it
  return kwargs.is_object() && kwargs.contains("every_n_layers") &&
                 kwargs.at("every_n_layers").is_number_integer()
             ? kwargs.at("every_n_layers").get<int64_t>()
             : 1;
}

int64_t TrainingArguments::resolved_data_seed() const { return data_seed.value_or(seed); }

}  // namespace berth::train
