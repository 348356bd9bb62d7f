// `berth train` and `berth eval`: the Trainer on the command line.
#include <iostream>
#include <memory>
#include <sstream>

#include "berth/core/error.h"
#include "berth/device/dist_env.h"
#include "berth/launch/launcher.h"
#include "berth/model/model_presets.h"
#include "berth/train/eval_job.h"
#include "berth/train/training_job.h"
#include "command.h"
#include "count_flag.h"
#include "dataset_flags.h"
#include "question_answering_flags.h"
#include "training_flags.h"

namespace berth::cli {
namespace {

// The job's options plus what only a command line has: the training flags' text and the relaunch.
struct TrainCommandOptions {
  train::TrainingJobOptions job;
  TrainingFlags training;
  std::string nproc_per_node;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) items.push_back(item);
  return items;
}

// `berth train --nproc-per-node N ...` or `--device cuda:0,cuda:1`: one process per device through
// `berth launch` (the flag removed, so workers do not launch again) instead of several devices in one
// process.
std::optional<int> relaunch_as_workers(const TrainCommandOptions& options) {
  const auto device_flag = options.training.values.find("device");
  const bool device_list = device_flag != options.training.values.end() &&
                           options.training.options.at("device")->count() > 0 &&
                           device_flag->second.find(',') != std::string::npos;
  if (options.nproc_per_node.empty() && !device_list) return std::nullopt;
  BERTH_CHECK(
      !detect_dist_env().distributed(),
      "train: --nproc-per-node/--device with several devices starts workers, but this process already "
      "is one (RANK/WORLD_SIZE are set by a launcher). Fix: drop --nproc-per-node and give each worker "
      "one device");
  std::vector<std::string> command = worker_argv_without_flag(program_args());
  launch::LaunchOptions launch_options;
  if (device_list) {
    launch_options.devices = split_list(device_flag->second);
    // The workers get their device from BERTH_DEVICE; the list itself must not reach them.
    std::vector<std::string> kept;
    for (size_t i = 0; i < command.size(); ++i) {
      const std::string& arg = command[i];
      if ((arg == "--device") && i + 1 < command.size()) {
        ++i;
        continue;
      }
      if (arg.rfind("--device=", 0) == 0) continue;
      kept.push_back(arg);
    }
    command = kept;
  }
  launch_options.nproc_per_node = options.nproc_per_node.empty()
                                      ? static_cast<int>(launch_options.devices.size())
                                      : launch::parse_nproc(options.nproc_per_node);
  return launch::launch(launch_options, command, std::cout, std::cerr);
}

int run_train(TrainCommandOptions options) {
  if (const auto code = relaunch_as_workers(options)) return *code;
  options.job.args = resolve_training_arguments(options.training);
  train::run_training_job(std::move(options.job), std::cout);
  return 0;
}

}  // namespace

CommandAction add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train",
                                 "Fine-tune (or train from scratch) a BERT sequence classifier, as HF's "
                                 "Trainer does: checkpoints, resume, evaluation, report");
  auto options = std::make_shared<TrainCommandOptions>();
  cmd->add_option("--model", options->job.model,
                  "HF model directory to fine-tune (config.json, model.safetensors, tokenizer)");
  cmd->add_option("--model-preset", options->job.model_preset, "Train from scratch: " + model_preset_list());
  cmd->add_option(
         "--block-size", options->job.block_size,
         "causal-lm, masked-lm: concatenate the texts and train on blocks of this many tokens (0: one "
         "text per row, padded)")
      ->check(whole_number("--block-size 128, or 0 for one text per row"))
      ->capture_default_str();
  cmd->add_option("--mlm-probability", options->job.mlm_probability,
                  "masked-lm: the share of tokens masked (of them 80% become the mask token, 10% a random "
                  "token, 10% stay)")
      ->check(number_between(0, 1, "--mlm-probability 0.15 (run_mlm.py's default)"))
      ->capture_default_str();
  cmd->add_flag("--whole-word-mask", options->job.whole_word_mask,
                "masked-lm: mask every token of a chosen word (words: tokens whose offsets touch), all of "
                "them as the mask token (HF's whole_word_mask)");
  cmd->add_option(
      "--task", options->job.task,
      "sequence-classification, causal-lm, masked-lm, ... (default: what the checkpoint's architectures "
      "say, else sequence-classification)");
  cmd->add_option("--tokenizer", options->job.tokenizer,
                  "Tokenizer directory (default: the --model directory)");
  cmd->add_option(
      "--config-overrides", options->job.config_overrides,
      "With --model-preset: config.json fields to change, e.g. num_hidden_layers=2,hidden_dropout_prob=0.2");
  add_dataset_flags(*cmd, options->job.data, /*training=*/true);
  add_question_answering_flags(*cmd, options->job.question_answering);
  add_training_flags(*cmd, options->training);
  cmd->add_option("--early-stopping-patience", options->job.early_stopping_patience,
                  "Stop after this many evaluations without improvement of metric_for_best_model (0: off)")
      ->check(whole_number("--early-stopping-patience 3, or 0 for no early stopping"))
      ->capture_default_str();
  cmd->add_option("--early-stopping-threshold", options->job.early_stopping_threshold,
                  "The improvement that counts for early stopping")
      ->check(non_negative_number("--early-stopping-threshold 0.01, or 0 for any improvement"))
      ->capture_default_str();
  cmd->add_option("--hp-search", options->job.hp_space,
                  "Hyperparameter search space (JSON file); runs a search instead of one training");
  cmd->add_option("--n-trials", options->job.n_trials, "Trials of the search (grid: 0 = the whole grid)")
      ->check(whole_number("--n-trials 10 (grid: 0 for the whole grid)"))
      ->capture_default_str();
  cmd->add_option("--hp-method", options->job.hp_method, "random or grid")
      ->check(one_of({"random", "grid"}, "--hp-method random"))
      ->capture_default_str();
  cmd->add_option("--direction", options->job.direction, "maximize or minimize the objective")
      ->check(
          one_of({"maximize", "minimize"}, "--direction minimize for a loss, maximize for accuracy or F1"))
      ->capture_default_str();
  cmd->add_option("--hp-objective", options->job.hp_objective,
                  "Eval metric to optimise (default: metric_for_best_model, else eval_loss)");
  cmd->add_option(
      "--nproc-per-node,--nproc_per_node", options->nproc_per_node,
      "Train with N processes on this machine (DDP), as `berth launch --nproc-per-node N -- berth "
      "train ...`; auto = one per visible GPU. --device cuda:0,cuda:1 also starts one per device");
  return [options] { return run_train(*options); };
}

CommandAction add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval",
                                 "Evaluate a fine-tuned classifier: loss, accuracy, precision/recall/F1, "
                                 "confusion matrix");
  auto options = std::make_shared<train::EvalJobOptions>();
  cmd->add_option("--model", options->model, "Fine-tuned model directory (berth train's output)")->required();
  add_dataset_flags(*cmd, options->data, /*training=*/false);
  add_question_answering_flags(*cmd, options->question_answering);
  cmd->add_option("--split", options->split, "With --data: test, validation or train")
      ->check(one_of({"test", "validation", "eval", "train"}, "--split test (or validation, train)"))
      ->capture_default_str();
  cmd->add_option("--batch-size", options->batch_size, "Examples per forward pass")
      ->check(whole_number("--batch-size 32"))
      ->capture_default_str();
  cmd->add_option("--max-length", options->max_length,
                  "Longest input in tokens (0: the length the model was trained at, else what the model and "
                  "its tokenizer allow)")
      ->check(whole_number("--max-length 128, or 0 for the model's limit"))
      ->capture_default_str();
  cmd->add_option("--device", options->device, "auto, cpu, cuda or cuda:N")
      ->envname("BERTH_DEVICE")
      ->capture_default_str();
  cmd->add_flag("--bf16", options->bf16,
                "Compute the forward in bf16 (autocast over the fp32 weights, as berth train --bf16): AMX or "
                "AVX512_BF16 matmuls on a CPU that has them (berth doctor says)");
  cmd->add_option("--output", options->output, "Also write the metrics as JSON here");
  cmd->add_option("--mlm-probability", options->masking.mlm_probability,
                  "masked-lm: the share of tokens masked (as in training)")
      ->check(number_between(0, 1, "--mlm-probability 0.15 (run_mlm.py's default)"))
      ->capture_default_str();
  cmd->add_flag("--whole-word-mask", options->masking.whole_word_mask, "masked-lm: mask whole words");
  cmd->add_option("--seed", options->seed, "masked-lm: the seed of the masks")->capture_default_str();
  cmd->add_option("--task", options->task,
                  "The head to evaluate: sequence-classification, causal-lm, ... (default: the checkpoint's "
                  "architectures); causal-lm reports eval_loss and eval_perplexity");
  return [options] {
    train::run_eval_job(*options, std::cout);
    return 0;
  };
}

}  // namespace berth::cli
