// `berth export`: a consolidated HF model directory from any berth checkpoint (ZeRO shards or full weights).
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <torch/torch.h>

#include "berth/core/error.h"
#include "berth/core/output_path.h"
#include "berth/dist/zero_checkpoint.h"
#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"
#include "berth/model/bert_model.h"
#include "berth/model/pretrained.h"
#include "berth/train/checkpoint_dir.h"
#include "command.h"

namespace berth::cli {
namespace {

namespace fs = std::filesystem;

struct ExportOptions {
  std::string checkpoint;
  std::string output;
  bool overwrite = false;
};

// Tokenizer files a checkpoint may hold (save_tokenizer's, plus HF's optional ones): copied as they are.
constexpr const char* kTokenizerFiles[] = {"vocab.txt", "tokenizer.json", "tokenizer_config.json",
                                           "special_tokens_map.json", "added_tokens.json"};

c10::ScalarType model_dtype(const PretrainedConfig& config, const std::string& source) {
  const std::string name = config.torch_dtype.value_or("float32");
  if (name == "float32") return c10::ScalarType::Float;
  if (name == "float16") return c10::ScalarType::Half;
  if (name == "bfloat16") return c10::ScalarType::BFloat16;
  BERTH_FAIL(source, ": torch_dtype '", name,
             "' is not one berth exports (float32, float16, bfloat16). Fix: set torch_dtype in config.json");
}

void check_checkpoint_dir(const std::string& dir) {
  BERTH_CHECK(fs::is_directory(dir), "--checkpoint ", dir,
              ": no such directory. Fix: pass a checkpoint directory, e.g. output_dir/checkpoint-<step>");
  if (fs::exists(fs::path(dir) / "config.json")) return;
  const std::optional<std::string> latest = train::latest_checkpoint(dir);
  BERTH_CHECK(!latest, "--checkpoint ", dir,
              " is a training output directory, not a checkpoint (it has no config.json). Fix: pass one of "
              "its checkpoints, e.g. --checkpoint ",
              *latest, " (the latest)");
  BERTH_FAIL("--checkpoint ", dir,
             ": expected a checkpoint directory with config.json, found none. Fix: pass a checkpoint the "
             "Trainer wrote (output_dir/checkpoint-<step>)");
}

// Fills `model` with the checkpoint's parameters: fp32 masters (ZeRO shards or model.safetensors) cast to
// the model's dtype; parameters the shards lack (frozen ones) stay as model.safetensors had them.
int64_t fill_parameters(torch::nn::Module& model, const std::string& checkpoint, bool loaded_weights) {
  const std::map<std::string, at::Tensor> values = dist::consolidate_parameters(checkpoint);
  std::set<std::string> saved_names;
  const fs::path weights = fs::path(checkpoint) / "model.safetensors";
  if (loaded_weights) {
    for (const std::string& name : io::SafetensorsFile::open(weights.string()).names())
      saved_names.insert(name);
  }
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  int64_t filled = 0;
  for (auto& item : model.named_parameters()) {
    const auto it = values.find(item.key());
    if (it == values.end()) {
      BERTH_CHECK(
          saved_names.count(item.key()), checkpoint, " holds no value for parameter '", item.key(),
          "' (neither in the ZeRO shards nor in model.safetensors). Fix: export a complete checkpoint "
          "written by berth for this model's config.json");
      continue;
    }
    BERTH_CHECK(it->second.sizes() == item.value().sizes(), checkpoint, ": parameter '", item.key(),
                "' has shape ", it->second.sizes(), " in the checkpoint but ", item.value().sizes(),
                " in the model its config.json describes. Fix: export a checkpoint whose config.json matches "
                "its weights");
    item.value().copy_(it->second);
    used.insert(item.key());
    ++filled;
  }
  for (const auto& [name, value] : values) {
    BERTH_CHECK(used.count(name), checkpoint, ": the checkpoint holds parameter '", name,
                "' which the model its config.json describes has no place for. Fix: export a checkpoint "
                "whose config.json matches its weights");
  }
  return filled;
}

// A base BertModel checkpoint (no task head): the one architecture outside the AutoModel task table.
int64_t write_bert_base_model(const std::string& checkpoint, c10::ScalarType dtype, const std::string& dir) {
  const bool has_weights = fs::exists(fs::path(checkpoint) / "model.safetensors");
  BertModel model{nullptr};
  if (has_weights) {
    PretrainedOptions options;
    options.dtype = dtype;
    Pretrained<BertModel> loaded = from_pretrained<BertModel>(checkpoint, options);
    for (const std::string& warning : loaded.report.warnings) std::cerr << "warning: " << warning << "\n";
    model = loaded.model;
  } else {
    model = BertModel(BertConfig::load(checkpoint + "/config.json"), BertInitOptions{false, std::nullopt});
    model->to(dtype);
  }
  const int64_t filled = fill_parameters(*model, checkpoint, has_weights);
  save_pretrained(model, dir);
  return filled;
}

// Any family and task head the AutoModel table knows: the checkpoint's architectures choose the head.
int64_t write_task_model(const std::string& checkpoint, const PretrainedConfig& config, c10::ScalarType dtype,
                         const std::string& dir) {
  const bool has_weights = fs::exists(fs::path(checkpoint) / "model.safetensors");
  const ModelTask task = default_task(config);
  std::shared_ptr<TaskModel> model;
  if (has_weights) {
    PretrainedOptions options;
    options.dtype = dtype;
    auto loaded = load_task_model(checkpoint, options, task);
    for (const std::string& warning : loaded.report.warnings) std::cerr << "warning: " << warning << "\n";
    model = loaded.model;
  } else {
    model = build_task_model(config, task, TaskModelInit{false, std::nullopt});
    model->module().to(dtype);
  }
  const int64_t filled = fill_parameters(model->module(), checkpoint, has_weights);
  model->save_pretrained(dir);
  return filled;
}

// A fresh directory beside `output` (same file system, so the final rename is atomic).
std::string make_temp_dir(const fs::path& output) {
  const fs::path parent = output.has_parent_path() ? output.parent_path() : fs::path(".");
  fs::create_directories(parent);
  std::string pattern = (parent / (".tmp-export-" + output.filename().string() + "-XXXXXX")).string();
  BERTH_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot create a temporary directory in ", parent.string(),
              ". Fix: check that it is writable");
  return pattern;
}

int run_export(const ExportOptions& options) {
  check_checkpoint_dir(options.checkpoint);
  check_output_directory(options.output, "--output");
  fs::path output = fs::path(options.output).lexically_normal();
  if (output.filename().empty()) output = output.parent_path();  // "out/" -> "out"
  std::error_code error;
  BERTH_CHECK(!fs::exists(output) || fs::is_directory(output), "--output ", options.output,
              " exists and is not a directory. Fix: pass a directory path");
  BERTH_CHECK(!fs::exists(output) || !fs::equivalent(output, options.checkpoint, error), "--output ",
              options.output, " is the checkpoint itself. Fix: export into another directory");
  const bool output_has_files = fs::exists(output) && !fs::is_empty(output);
  BERTH_CHECK(!output_has_files || options.overwrite, "--output ", options.output,
              " is not empty. Fix: pass --overwrite to replace it, or choose another directory");

  const std::string config_path = (fs::path(options.checkpoint) / "config.json").string();
  const PretrainedConfig config = PretrainedConfig::load(config_path);
  const c10::ScalarType dtype = model_dtype(config, config_path);
  const bool base_bert =
      config.model_type() == "bert" && config.architectures == std::vector<std::string>{"BertModel"};
  if (!base_bert) model_family(config.model_type(), config.where("model_type"));  // names what berth knows

  const std::string tmp = make_temp_dir(output);
  try {
    const int64_t filled = base_bert ? write_bert_base_model(options.checkpoint, dtype, tmp)
                                     : write_task_model(options.checkpoint, config, dtype, tmp);
    int copied = 0;
    for (const char* name : kTokenizerFiles) {
      const fs::path from = fs::path(options.checkpoint) / name;
      if (!fs::is_regular_file(from)) continue;
      fs::copy_file(from, fs::path(tmp) / name, fs::copy_options::overwrite_existing);
      ++copied;
    }
    // Swap in: the old output (when replaced) is moved aside first and removed only after the rename.
    std::string aside;
    if (fs::exists(output)) {
      aside = make_temp_dir(output);
      fs::remove(aside);
      fs::rename(output, aside);
    }
    fs::rename(tmp, output);
    if (!aside.empty()) fs::remove_all(aside, error);

    std::string source = "model.safetensors";
    if (dist::has_zero_shards(options.checkpoint)) {
      const dist::ZeroCheckpointLayout zero = dist::read_zero_layout(options.checkpoint);
      source = "ZeRO stage " + std::to_string(zero.stage) + " shards of " + std::to_string(zero.world_size) +
               " ranks, step " + std::to_string(zero.step);
    }
    std::cout << "export: " << filled << " parameters from " << source << ", " << c10::toString(dtype) << ", "
              << copied << " tokenizer files -> " << output.string() << "\n";
  } catch (...) {
    fs::remove_all(tmp, error);
    throw;
  }
  return 0;
}

}  // namespace

CommandAction add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "export",
      "Write a consolidated HF model directory (config.json, model.safetensors, tokenizer files) from any "
      "checkpoint: ZeRO shards of any world size and stage, or a one-process/DDP checkpoint");
  auto options = std::make_shared<ExportOptions>();
  cmd->add_option("--checkpoint", options->checkpoint, "Checkpoint directory (output_dir/checkpoint-<step>)")
      ->required();
  cmd->add_option("--output", options->output,
                  "Directory for the HF model (created; written whole or not at all)")
      ->required();
  cmd->add_flag("--overwrite", options->overwrite, "Replace --output when it is not empty");
  return [options] { return run_export(*options); };
}

}  // namespace berth::cli
