// `berth train` and `berth eval`: the Trainer on the command line.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/device/device.h"
#include "berth/dist/process_context.h"
#include "berth/launch/launcher.h"
#include "berth/model/bert_presets.h"
#include "berth/model/pretrained.h"
#include "berth/placement/place.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/callbacks.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/trainer.h"
#include "command.h"
#include "dataset_flags.h"
#include "trained_input.h"
#include "training_flags.h"

namespace berth::cli {
namespace {

struct TrainCommandOptions {
  std::string model;
  std::string model_preset;
  std::string tokenizer;
  std::string config_overrides;
  DatasetFlags data;
  TrainingFlags training;
  int early_stopping_patience = 0;
  double early_stopping_threshold = 0.0;
  std::string hp_space;
  size_t n_trials = 10;
  std::string hp_method = "random";
  std::string direction = "maximize";
  std::string hp_objective;
  std::string nproc_per_node;
};

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in.good(), "cannot read ", path, ". Fix: check the path");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "num_hidden_layers=2,hidden_dropout_prob=0.2" over a preset's config, validated as config.json is.
BertConfig apply_config_overrides(const BertConfig& config, const std::string& overrides) {
  if (overrides.empty()) return config;
  nlohmann::json json = nlohmann::json::parse(config.to_json_text());
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
    BERTH_CHECK(json.contains(key), "--config-overrides: '", key,
                "' is not a field of the preset's config.json. "
                "Fix: use one of its fields, e.g. num_hidden_layers, hidden_size, intermediate_size, "
                "num_attention_heads, hidden_dropout_prob, max_position_embeddings");
    try {
      json[key] = nlohmann::json::parse(value);
    } catch (const nlohmann::json::exception&) {
      json[key] = value;  // a bare word is a string (hidden_act=gelu_new)
    }
  }
  return BertConfig::from_json_text(json.dump(), "--config-overrides");
}

std::string confusion_table(const std::vector<std::vector<int64_t>>& confusion,
                            const std::vector<std::string>& labels) {
  std::ostringstream out;
  size_t width = 9;
  for (const auto& label : labels) width = std::max(width, label.size() + 2);
  out << std::setw(static_cast<int>(width)) << "true\\pred";
  for (const auto& label : labels) out << std::setw(static_cast<int>(width)) << label;
  out << "\n";
  for (size_t r = 0; r < confusion.size(); ++r) {
    out << std::setw(static_cast<int>(width)) << (r < labels.size() ? labels[r] : std::to_string(r));
    for (int64_t count : confusion[r]) out << std::setw(static_cast<int>(width)) << count;
    out << "\n";
  }
  return out.str();
}

void print_metrics(std::ostream& out, const std::string& title,
                   const std::map<std::string, double>& metrics) {
  out << "***** " << title << " *****\n";
  for (const auto& [name, value] : metrics)
    out << "  " << std::left << std::setw(28) << name << " = " << std::setprecision(4) << value << "\n";
  out << std::setprecision(6);
  out << std::right;
}

// Where a rank other than 0 sends what rank 0 alone prints.
std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

// After `berth launch --max-restarts` restarted the group, the run continues from its latest checkpoint
// (torchrun's contract, which leaves that to the script).
void resume_after_restart(train::TrainingArguments& args, std::ostream& out) {
  const char* count = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (!count || std::string(count) == "0" || args.resume_from_checkpoint) return;
  if (!std::filesystem::exists(args.output_dir) || !train::latest_checkpoint(args.output_dir)) {
    out << "restart " << count << ": no checkpoint in " << args.output_dir
        << " yet, training from the start\n";
    return;
  }
  args.resume_from_checkpoint = "latest";
  out << "restart " << count << ": resuming from the latest checkpoint in " << args.output_dir << "\n";
}

std::shared_ptr<data::TokenizedDataset> encode(const std::optional<data::TextDataset>& dataset,
                                               const tokenizer::WordPieceTokenizer& tokenizer,
                                               const data::EncodeTextOptions& options) {
  if (!dataset) return nullptr;
  return std::make_shared<data::TokenizedDataset>(data::encode_text_dataset(*dataset, tokenizer, options));
}

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

int run_train(const TrainCommandOptions& options) {
  if (const auto code = relaunch_as_workers(options)) return *code;
  BERTH_CHECK(
      options.model.empty() != options.model_preset.empty(),
      "train: give exactly one of --model DIR (an HF model directory to fine-tune) and --model-preset NAME "
      "(a BERT trained from scratch: ",
      [] {
        std::string names;
        for (const auto& name : bert_preset_names()) names += (names.empty() ? "" : ", ") + name;
        return names;
      }(),
      ")");
  train::TrainingArguments args = resolve_training_arguments(options.training);
  BERTH_CHECK(!args.output_dir.empty(),
              "train: no output directory. Fix: --output-dir DIR (or output_dir in --args)");
  // Under a launcher: this rank's device is chosen and bound, and the process group joined, before anything
  // is built; only rank 0 prints.
  const dist::ProcessContext context = dist::init_process_context(args);
  std::ostream& out = context.is_main() ? std::cout : null_stream();
  if (context.env.distributed()) {
    args.device = device_name(context.device);
    out << "distributed: " << context.env.world_size << " ranks (" << to_string(context.env.source) << ", "
        << context.comm->backend_name() << "), rank 0 on " << args.device << "\n";
  }
  if (context.zero.stage > 0) out << "sharding: " << dist::describe_zero(context.zero) << "\n";
  resume_after_restart(args, out);

  const std::string tokenizer_dir = options.tokenizer.empty() ? options.model : options.tokenizer;
  BERTH_CHECK(!tokenizer_dir.empty(),
              "train: --model-preset trains a model from scratch and needs a tokenizer. "
              "Fix: --tokenizer DIR (make one from your training text with `berth tokenizer train --input "
              "train.jsonl --vocab-size 8000 --lowercase --output DIR`)");
  const tokenizer::WordPieceTokenizer tokenizer = tokenizer::load_tokenizer(tokenizer_dir);

  // Labels: the training data's (a fine-tuned model's own labels are replaced, as HF's num_labels= does).
  LoadedDatasets data = load_datasets(options.data, std::nullopt);
  BERTH_CHECK(data.train, "train: no training data. Fix: --data spamassassin or --train FILE");
  out << "data: " << data.description << "\n";

  BertConfig preset_config;
  if (!options.model_preset.empty()) {
    preset_config = apply_config_overrides(
        bert_preset(options.model_preset, static_cast<int64_t>(tokenizer.model().size())),
        options.config_overrides);
    preset_config.set_labels(data.label_map.labels());
    preset_config.problem_type = data::to_string(data.problem_type);
    preset_config.pad_token_id = tokenizer.token_id(tokenizer.special_tokens().pad);
  } else {
    BERTH_CHECK(options.config_overrides.empty(),
                "train: --config-overrides applies to --model-preset only; a "
                "pretrained model keeps its architecture. Fix: drop --config-overrides");
  }
  const auto max_position = options.model_preset.empty()
                                ? BertConfig::load(options.model + "/config.json").max_position_embeddings
                                : preset_config.max_position_embeddings;
  BERTH_CHECK(args.max_length <= max_position, "train: --max_length ", args.max_length,
              " exceeds the model's max_position_embeddings (", max_position, "). Fix: --max_length ",
              max_position, " or less");

  const auto start = std::chrono::steady_clock::now();
  const data::EncodeTextOptions encoding = encode_options(args);
  train::TrainerOptions trainer_options;
  trainer_options.train_dataset = encode(data.train, tokenizer, encoding);
  trainer_options.eval_dataset = encode(data.eval, tokenizer, encoding);
  auto test_dataset = encode(data.test, tokenizer, encoding);
  out << "tokenized in " << std::fixed << std::setprecision(1)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s (max_length "
      << encoding.max_length;
  if (encoding.keep_head)
    out << ", head+tail: the first " << *encoding.keep_head << " tokens and the last "
        << encoding.max_length - 2 - *encoding.keep_head;
  out << ")\n" << std::defaultfloat << std::setprecision(6);

  const std::string model_dir = options.model;
  const std::vector<std::string> labels = data.label_map.labels();
  const std::string problem_type = data::to_string(data.problem_type);
  // berth's own model_init builds the model where the run will use it, so --placement strict holds for it
  // (strict is for models that user code places).
  const c10::Device device = context.device;
  trainer_options.model_init = [=](const train::Trial*) {
    BertForSequenceClassification model{nullptr};
    if (model_dir.empty()) {
      model = BertForSequenceClassification(preset_config);
    } else {
      PretrainedOptions pretrained;
      pretrained.labels = labels;
      pretrained.ignore_mismatched_sizes = true;  // a new head for these labels, as HF's num_labels= does
      auto loaded = from_pretrained<BertForSequenceClassification>(model_dir, pretrained);
      loaded.model->config.problem_type = problem_type;
      for (const auto& warning : loaded.report.warnings) std::cerr << "warning: " << warning << "\n";
      model = loaded.model;
    }
    if (device.type() != c10::kMeta) place(*model, device);
    return model;
  };
  trainer_options.args = args;
  trainer_options.tokenizer = tokenizer;
  trainer_options.gradient_sync = context.gradient_sync;
  if (options.early_stopping_patience > 0)
    trainer_options.callbacks.push_back(std::make_shared<train::EarlyStoppingCallback>(
        options.early_stopping_patience, options.early_stopping_threshold));
  train::Trainer trainer(std::move(trainer_options));

  if (!options.hp_space.empty()) {
    const auto space = train::SearchSpace::from_json_text(read_file_text(options.hp_space), options.hp_space);
    const auto best = trainer.hyperparameter_search(
        space, options.n_trials, train::parse_direction(options.direction),
        options.hp_method == "grid" ? train::SearchMethod::Grid : train::SearchMethod::Random,
        options.hp_objective);
    out << "best trial: run-" << best.trial << " objective " << best.objective << " with";
    for (const auto& [name, value] : best.params) out << " --" << name << " " << value;
    out << "\n  (" << args.output_dir << "/hp_search.jsonl, " << args.output_dir
        << "/best_trial_args.json)\n";
    context.comm->barrier("the end of the search");  // rank 0 hosts the rendezvous store: it leaves last
    return 0;
  }

  const train::TrainOutput result = trainer.train();
  trainer.save_metrics("train", result.metrics);
  std::map<std::string, double> final_metrics;
  std::vector<std::vector<int64_t>> confusion;
  if (trainer_options.eval_dataset || data.eval) {
    const auto metrics = trainer.evaluate();
    trainer.save_metrics("eval", metrics);
    print_metrics(out, "eval metrics", metrics);
    final_metrics.insert(metrics.begin(), metrics.end());
  }
  if (test_dataset) {
    const auto prediction = trainer.predict(*test_dataset, "test");
    trainer.save_metrics("test", prediction.metrics);
    print_metrics(out, "test metrics", prediction.metrics);
    final_metrics.insert(prediction.metrics.begin(), prediction.metrics.end());
    confusion = prediction.confusion;
    if (!confusion.empty()) out << "test confusion matrix:\n" << confusion_table(confusion, labels);
  }
  trainer.write_report(final_metrics, confusion);
  out << "model, tokenizer and results: " << args.output_dir << " (report: " << args.output_dir
      << "/report.html; try `berth predict --model " << args.output_dir << " --input FILE.jsonl`)\n";
  context.comm->barrier("the end of training");  // rank 0 hosts the rendezvous store: it leaves last
  return 0;
}

struct EvalCommandOptions {
  std::string model;
  DatasetFlags data;
  std::string split = "test";
  size_t batch_size = 32;
  size_t max_length = 0;
  std::string device = "auto";
  std::string output;
};

int run_eval(const EvalCommandOptions& options) {
  const tokenizer::WordPieceTokenizer tokenizer = tokenizer::load_tokenizer(options.model);
  const BertConfig config = BertConfig::load(options.model + "/config.json");
  std::vector<std::string> model_labels;
  for (const auto& [id, label] : config.id2label) model_labels.push_back(label);
  LoadedDatasets data = load_datasets(options.data, data::LabelMap(model_labels));
  const std::optional<data::TextDataset>* chosen = &data.test;
  if (options.split == "validation" || options.split == "eval") chosen = &data.eval;
  if (options.split == "train") chosen = &data.train;
  if (!*chosen) chosen = data.test ? &data.test : &data.eval;
  BERTH_CHECK(*chosen,
              "eval: nothing to evaluate on. Fix: --data spamassassin (with --split test|validation) or "
              "--eval FILE / --test FILE");

  auto loaded = from_pretrained<BertForSequenceClassification>(options.model);
  BERTH_CHECK(loaded.report.missing.empty(), "eval: ", options.model,
              " is not a fine-tuned classifier (it lacks ", loaded.report.missing.front(),
              "). Fix: evaluate the output directory of `berth train`");
  train::TrainingArguments args;
  args.output_dir = options.model;
  args.per_device_eval_batch_size = static_cast<int64_t>(options.batch_size);
  args.device = options.device;
  // The length and truncation the model was trained with (its training_args.json), else the model's limit.
  data::EncodeTextOptions encoding;
  encoding.max_length = static_cast<size_t>(loaded.model->config.max_position_embeddings);
  if (auto trained = trained_encode_options(options.model)) encoding = *trained;
  if (options.max_length > 0) encoding.max_length = options.max_length;
  train::TrainerOptions trainer_options;
  trainer_options.args = args;
  trainer_options.model = loaded.model;
  trainer_options.tokenizer = tokenizer;
  train::Trainer trainer(std::move(trainer_options));
  const auto dataset = data::encode_text_dataset(**chosen, tokenizer, encoding);
  const auto prediction = trainer.predict(dataset, "eval");
  print_metrics(std::cout, "eval metrics (" + std::to_string(dataset.size()) + " examples)",
                prediction.metrics);
  if (!prediction.confusion.empty())
    std::cout << "confusion matrix:\n" << confusion_table(prediction.confusion, model_labels);
  if (!options.output.empty()) {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [name, value] : prediction.metrics) json[name] = value;
    write_file_atomically(options.output, json.dump(4) + "\n");
  }
  return 0;
}

}  // namespace

CommandAction add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train",
                                 "Fine-tune (or train from scratch) a BERT sequence classifier, as HF's "
                                 "Trainer does: checkpoints, resume, evaluation, report");
  auto options = std::make_shared<TrainCommandOptions>();
  cmd->add_option("--model", options->model,
                  "HF model directory to fine-tune (config.json, model.safetensors, tokenizer)");
  cmd->add_option("--model-preset", options->model_preset,
                  "Train from scratch: bert-tiny, bert-mini, bert-small or bert-base");
  cmd->add_option("--tokenizer", options->tokenizer, "Tokenizer directory (default: the --model directory)");
  cmd->add_option(
      "--config-overrides", options->config_overrides,
      "With --model-preset: config.json fields to change, e.g. num_hidden_layers=2,hidden_dropout_prob=0.2");
  add_dataset_flags(*cmd, options->data, /*training=*/true);
  add_training_flags(*cmd, options->training);
  cmd->add_option("--early-stopping-patience", options->early_stopping_patience,
                  "Stop after this many evaluations without improvement of metric_for_best_model (0: off)")
      ->capture_default_str();
  cmd->add_option("--early-stopping-threshold", options->early_stopping_threshold,
                  "The improvement that counts for early stopping")
      ->capture_default_str();
  cmd->add_option("--hp-search", options->hp_space,
                  "Hyperparameter search space (JSON file); runs a search instead of one training");
  cmd->add_option("--n-trials", options->n_trials, "Trials of the search (grid: 0 = the whole grid)")
      ->capture_default_str();
  cmd->add_option("--hp-method", options->hp_method, "random or grid")
      ->check(CLI::IsMember({"random", "grid"}))
      ->capture_default_str();
  cmd->add_option("--direction", options->direction, "maximize or minimize the objective")
      ->check(CLI::IsMember({"maximize", "minimize"}))
      ->capture_default_str();
  cmd->add_option("--hp-objective", options->hp_objective,
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
  auto options = std::make_shared<EvalCommandOptions>();
  cmd->add_option("--model", options->model, "Fine-tuned model directory (berth train's output)")->required();
  add_dataset_flags(*cmd, options->data, /*training=*/false);
  cmd->add_option("--split", options->split, "With --data: test, validation or train")
      ->check(CLI::IsMember({"test", "validation", "eval", "train"}))
      ->capture_default_str();
  cmd->add_option("--batch-size", options->batch_size, "Examples per forward pass")->capture_default_str();
  cmd->add_option("--max-length", options->max_length, "Longest input in tokens (0: the model's limit)")
      ->capture_default_str();
  cmd->add_option("--device", options->device, "auto, cpu, cuda or cuda:N")
      ->envname("BERTH_DEVICE")
      ->capture_default_str();
  cmd->add_option("--output", options->output, "Also write the metrics as JSON here");
  return [options] { return run_eval(*options); };
}

}  // namespace berth::cli
