// `berth estimate-memory`: per-rank bytes of parameters, gradients and optimizer states for a ZeRO stage,
// world size, precision and offload choice (the ZeRO paper's accounting), for a model directory or a preset.
#include <iostream>
#include <memory>

#include "berth/core/error.h"
#include "berth/model/bert_config.h"
#include "berth/model/bert_presets.h"
#include "berth/train/memory_estimate.h"
#include "command.h"

namespace berth::cli {
namespace {

struct EstimateMemoryOptions {
  std::string model_dir;
  std::string preset;
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

}  // namespace

CommandAction add_estimate_memory_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("estimate-memory",
                         "Per-rank memory of parameters, gradients and optimizer states under ZeRO (the "
                         "ZeRO paper's accounting, K=12 for mixed-precision Adam)");
  auto options = std::make_shared<EstimateMemoryOptions>();
  auto* model =
      cmd->add_option("--model", options->model_dir, "HF model directory (its config.json is read)");
  auto* preset =
      cmd->add_option("--model-preset", options->preset,
                      "A named size instead of a model: bert-tiny, bert-mini, bert-small, bert-base");
  model->excludes(preset);
  preset->excludes(model);
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
    BERTH_CHECK(!options->model_dir.empty() || !options->preset.empty(),
                "estimate-memory needs a model: --model DIR or --model-preset NAME. Fix: e.g. --model-preset "
                "bert-base");
    BertConfig config;
    int64_t num_labels = options->num_labels;
    std::string model_name;
    if (!options->model_dir.empty()) {
      config = BertConfig::load(options->model_dir + "/config.json");
      if (labels->count() == 0) num_labels = config.num_labels();
      model_name = options->model_dir;
    } else {
      config = bert_preset(options->preset);
      model_name = options->preset;
    }
    BERTH_CHECK(num_labels >= 1, "--num-labels must be >= 1, found ", num_labels,
                ". Fix: e.g. --num-labels 2");
    const train::Precision precision = parse_precision(options->precision);
    const int64_t num_params = train::count_bert_parameters(config, num_labels);
    const train::MemoryEstimate estimate = train::estimate_zero_memory(
        num_params, options->world_size, options->stage, precision, options->offload_optimizer,
        options->offload_param, train::largest_bert_layer_parameters(config, num_labels));
    if (options->json) {
      std::cout << train::memory_estimate_json(estimate) << std::endl;
      return 0;
    }
    std::cout << model_name << ": " << num_params << " parameters; per rank with ZeRO stage "
              << estimate.stage << ", " << estimate.world_size << " rank(s), " << train::to_string(precision)
              << (estimate.offload_optimizer ? ", optimizer offloaded" : "")
              << (estimate.offload_param ? ", parameters offloaded" : "") << ":\n"
              << train::format_memory_table(estimate, std::nullopt) << std::flush;
    return 0;
  };
}

}  // namespace berth::cli
