// The training job's model: the choice of model and task checked, a preset's config with its overrides, and
// the model_init that builds the model where the run trains.
#include "train/training_job_model.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/core/output_path.h"
#include "berth/device/device.h"
#include "berth/model/auto_model.h"
#include "berth/model/model_presets.h"
#include "berth/placement/place.h"
#include "berth/tasks/task_recipe.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/tensorboard_log.h"

namespace berth::train {
namespace {

// "num_hidden_layers=2,hidden_dropout_prob=0.2" over a preset's config; the family validates the result
// when it builds the model.
PretrainedConfig apply_config_overrides(PretrainedConfig config, const std::string& overrides) {
  std::stringstream list(overrides);
  std::string item;
  while (std::getline(list, item, ',')) {
    const auto eq = item.find('=');
    BERTH_CHECK(eq != std::string::npos && eq > 0,
                "--config-overrides: expected key=value items separated by "
                "commas, found '",
                item, "'. Fix: e.g. --config-overrides num_hidden_layers=2,hidden_dropout_prob=0.2");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    BERTH_CHECK(!config.get_json(key).empty(), "--config-overrides: '", key,
                "' is not a field of the preset's config.json. "
                "Fix: use one of its fields, e.g. num_hidden_layers, hidden_size, intermediate_size, "
                "num_attention_heads, hidden_dropout_prob, max_position_embeddings");
    try {
      config.set_json(key, value);
    } catch (const Error&) {
      config.set_string(key, value);  // a bare word is a string (hidden_act=gelu_new)
    }
  }
  return config;
}

// A shared model must already be where the run trains: moving it would train a copy.
void check_shared_device(TaskModel& model, c10::Device device, const std::string& source) {
  for (const auto& item : model.module().named_parameters(/*recurse=*/true))
    BERTH_CHECK(item.value().device() == device, source, " is on ", device_name(item.value().device()),
                " and this run trains on ", device_name(device),
                "; berth trains the model you pass in place, so ", "it does not move it. Fix: model.to(\"",
                device_name(device), "\") before Trainer(...), or ",
                "TrainingArguments(use_cpu=True) for a model on the CPU");
}

}  // namespace

void check_model_choice(const TrainingJobOptions& options) {
  BERTH_CHECK(
      options.model.empty() != options.model_preset.empty(),
      "train: give exactly one of --model DIR (an HF model directory to fine-tune) and --model-preset NAME "
      "(a model trained from scratch: ",
      model_preset_list(), ")");
  BERTH_CHECK(!options.args.output_dir.empty(),
              "train: no output directory. Fix: --output-dir DIR (or output_dir in --args)");
  // Before the data and the model load: create_directories would fail later with a bare filesystem error.
  check_output_directory(options.args.output_dir, "--output_dir");
  const std::vector<std::string> reports = options.args.resolved_report_to();
  if (std::find(reports.begin(), reports.end(), "tensorboard") != reports.end()) {
    const std::string logdir = tensorboard_logging_dir(options.args.output_dir, "");
    check_output_directory(logdir, "TENSORBOARD_LOGGING_DIR (report_to tensorboard's logging directory)");
  }
  if (!options.hp_space.empty()) check_input_file(options.hp_space, "--hp-search");
  if (!options.hp_space.empty()) check_search_allowed(options);
  BERTH_CHECK(options.hp_space.empty() || options.n_trials > 0 || options.hp_method == "grid",
              "train: --n-trials 0 runs no trial of a random search. Fix: --n-trials 10, or --hp-method grid "
              "(where 0 means the whole grid)");
  BERTH_CHECK(options.model_preset.empty() || !(options.tokenizer.empty() && options.model.empty()),
              "train: --model-preset trains a model from scratch and needs a tokenizer. "
              "Fix: --tokenizer DIR (make one from your training text with `berth tokenizer train --input "
              "train.jsonl --vocab-size 8000 --lowercase --output DIR`)");
  if (options.model_preset.empty())
    BERTH_CHECK(options.config_overrides.empty(),
                "train: --config-overrides applies to --model-preset only; a "
                "pretrained model keeps its architecture. Fix: drop --config-overrides");
}

PretrainedConfig preset_config(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                               const data::LoadedDatasets& data, ModelTask task) {
  PretrainedConfig config =
      apply_config_overrides(model_preset(options.model_preset, static_cast<int64_t>(tokenizer.vocab_size())),
                             options.config_overrides);
  if (const auto head = tasks::task_recipe(task).head_labels(data)) {
    config.set_labels(head->labels);
    if (head->problem_type) config.problem_type = *head->problem_type;
  }
  config.set_int("pad_token_id", tokenizer.pad_token_id());
  return config;
}

ModelTask job_task(const TrainingJobOptions& options, const std::optional<PretrainedConfig>& checkpoint) {
  return tasks::resolve_task(options.task, checkpoint ? &*checkpoint : nullptr);
}

ModelInit make_model_init(const TrainingJobOptions& options, const std::optional<PretrainedConfig>& preset,
                          ModelTask task, const data::LoadedDatasets& data, c10::Device device) {
  const std::string model_dir = options.model;
  PretrainedOptions pretrained;
  if (const auto head = tasks::task_recipe(task).head_labels(data)) {
    pretrained.labels = head->labels;
    pretrained.problem_type = head->problem_type;
    // A new head for these labels, as HF's num_labels= does; the body must still fit the weights.
    pretrained.ignore_mismatched_sizes = true;
  }
  return [=](const Trial*) {
    std::shared_ptr<TaskModel> model;
    if (preset) {
      model = build_task_model(*preset, task);
    } else {
      auto loaded =
          options.shared_tensors.empty()
              ? load_task_model(model_dir, pretrained, task)
              : share_task_model(model_dir, options.shared_tensors, options.shared_source, pretrained, task);
      for (const auto& warning : loaded.report.warnings) std::cerr << "warning: " << warning << "\n";
      model = loaded.model;
    }
    if (!options.shared_tensors.empty()) check_shared_device(*model, device, options.shared_source);
    if (device.type() != c10::kMeta) place(model->module(), device);
    return model;
  };
}

PretrainedConfig job_model_shape(const TrainingJobOptions& options) {
  if (!options.model_preset.empty())
    return apply_config_overrides(model_preset(options.model_preset, 1), options.config_overrides);
  return PretrainedConfig::load(options.model + "/config.json");
}

std::optional<int64_t> job_hidden_size(const TrainingJobOptions& options) {
  if (!options.args.deepspeed) return std::nullopt;
  return model_hidden_size(job_model_shape(options));
}

}  // namespace berth::train
