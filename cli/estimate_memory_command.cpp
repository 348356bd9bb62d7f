// `berth estimate-memory`: per-rank bytes of parameters, gradients and optimizer states for a ZeRO stage,
// world size, precision and offload choice (the ZeRO paper's accounting), for a model directory or a preset
// of any family (counted on the meta device, so a model of any size costs no memory).
#include <iostream>
#include <memory>

#include "berth/core/error.h"
#include "berth/model/auto_model.h"
#include "berth/model/meta_task_model.h"
#include "berth/model/model_presets.h"
#include "berth/tasks/task_recipe.h"
#include "berth/train/memory_estimate.h"
#include "command.h"

namespace berth::cli {
namespace {

struct EstimateMemoryOptions {
  std::string model_dir;
  std::string preset;
  std::string task;            // empty: the checkpoint's architectures (a preset: sequence classification)
  int64_t vocab_size = 30522;  // a preset's vocabulary (BERT's)
  int64_t world_size = 1;
  int stage = 0;
  bool offload_optimizer = false;
  bool offload_param = false;
  std::string precision = "fp32";
  int64_t num_labels = 2;
  bool json = false;
};

train::Precision parse_precision(const std::string& name) {
  if (name == "fp32") return train::Precision::fp32;
  if (name == "fp16") return train::Precision::fp16;
  if (name == "bf16") return train::Precision::bf16;
  BERTH_FAIL("--precision must be fp32, fp16 or bf16, found '", name, "'. Fix: e.g. --precision fp16");
}

// The model the options describe, on the meta device, and its name for the table.
std::pair<std::shared_ptr<TaskModel>, std::string> estimated_model(const EstimateMemoryOptions& options,
                                                                   bool labels_given) {
  BERTH_CHECK(!options.model_dir.empty() || !options.preset.empty(),
              "estimate-memory needs a model: --model DIR or --model-preset NAME (", model_preset_list(),
              "). Fix: e.g. --model-preset bert-base");
  const bool preset = options.model_dir.empty();
  PretrainedConfig config = preset ? model_preset(options.preset, options.vocab_size)
                                   : PretrainedConfig::load(options.model_dir + "/config.json");
  const ModelTask task = tasks::resolve_task(options.task, preset ? nullptr : &config);
  if (preset || labels_given) {
    BERTH_CHECK(options.num_labels >= 1, "--num-labels must be >= 1, found ", options.num_labels,
                ". Fix: e.g. --num-labels 2");
    config.set_num_labels(options.num_labels);
  }
  return {build_meta_task_model(config, task), preset ? options.preset : options.model_dir};
}

}  // namespace

CommandAction add_estimate_memory_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("estimate-memory",
                         "Per-rank memory of parameters, gradients and optimizer states under ZeRO (the "
                         "ZeRO paper's accounting, K=12 for mixed-precision Adam)");
  auto options = std::make_shared<EstimateMemoryOptions>();
  auto* model =
      cmd->add_option("--model", options->model_dir, "HF model directory (its config.json is read)");
  auto* preset = cmd->add_option("--model-preset", options->preset,
                                 "A named size instead of a model: " + model_preset_list());
  model->excludes(preset);
  preset->excludes(model);
  cmd->add_option("--task", options->task,
                  "The head counted: sequence-classification, token-classification, masked-lm, causal-lm or "
                  "question-answering (default: the checkpoint's architectures; a preset's: "
                  "sequence-classification)");
  cmd->add_option("--vocab-size", options->vocab_size, "A preset's vocabulary size")->capture_default_str();
  cmd->add_option("--world-size", options->world_size, "Number of ranks")->capture_default_str();
  cmd->add_option("--stage", options->stage, "ZeRO stage: 0 (DDP), 1, 2 or 3")->capture_default_str();
  cmd->add_flag("--offload-optimizer", options->offload_optimizer,
                "Optimizer states in host memory (stage 1-3)");
  cmd->add_flag("--offload-param", options->offload_param, "Parameter partitions in host memory (stage 3)");
  cmd->add_option("--precision", options->precision, "fp32, fp16 or bf16 (mixed precision)")
      ->capture_default_str();
  auto* labels = cmd->add_option("--num-labels", options->num_labels,
                                 "Classifier outputs (default 2; with --model, the config's labels)");
  cmd->add_flag("--json", options->json, "Print one JSON object instead of the table");
  return [options, labels] {
    const auto [model, model_name] = estimated_model(*options, labels->count() > 0);
    const ParameterCounts counts = count_parameters(*model);
    const int64_t num_params = counts.total;
    const train::Precision precision = parse_precision(options->precision);
    const train::MemoryEstimate estimate =
        train::estimate_zero_memory(num_params, options->world_size, options->stage, precision,
                                    options->offload_optimizer, options->offload_param, counts.largest_block);
    if (options->json) {
      std::cout << train::memory_estimate_json(estimate) << std::endl;
      return 0;
    }
    std::cout << model_name << " (" << model->info().architecture << "): " << num_params
              << " parameters; per rank with ZeRO stage " << estimate.stage << ", " << estimate.world_size
              << " rank(s), " << train::to_string(precision)
              << (estimate.offload_optimizer ? ", optimizer offloaded" : "")
              << (estimate.offload_param ? ", parameters offloaded" : "") << ":\n"
              << train::format_memory_table(estimate, std::nullopt) << std::flush;
    return 0;
  };
}

}  // namespace berth::cli
