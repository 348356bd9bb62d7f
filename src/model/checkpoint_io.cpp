// Checkpoint I/O for any family: safetensors into a module by HF's names and rules, and back out as HF
// writes.
#include "berth/model/checkpoint_io.h"

#include "berth/core/error.h"
#include "berth/io/safetensors.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace berth {
namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Python's repr of a list of strings, as HF's warnings print them: ['a', 'b'].
std::string python_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

// torch.Size([3, 32]), as HF prints shapes.
std::string torch_size(const std::vector<int64_t>& shape) {
  std::string out = "torch.Size([";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "])";
}

// The tensors of one checkpoint, possibly spread over several safetensors shards.
class Checkpoint {
 public:
  static Checkpoint open(const fs::path& dir) {
    Checkpoint checkpoint;
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(single)) {
      checkpoint.add_file(single.string());
    } else if (fs::exists(index)) {
      checkpoint.add_shards(dir, index);
    } else {
      BERTH_CHECK(
          !fs::exists(dir / "pytorch_model.bin") && !fs::exists(dir / "pytorch_model.bin.index.json"),
          dir.string(),
          ": has pytorch_model.bin but no model.safetensors. berth reads safetensors only (a pickle can run "
          "code when loaded). Fix: convert it once with Python: python3 -c \"import torch; from "
          "safetensors.torch import save_file; sd = torch.load('",
          (dir / "pytorch_model.bin").string(),
          "', map_location='cpu'); save_file({k: v.clone().contiguous() for k, v in sd.items()}, '",
          single.string(), "', metadata={'format': 'pt'})\"");
      BERTH_FAIL(dir.string(),
                 ": no model.safetensors (nor model.safetensors.index.json) found. Fix: point at an "
                 "HF model directory holding config.json and model.safetensors");
    }
    return checkpoint;
  }

  const std::map<std::string, std::size_t>& names() const { return where_; }
  std::vector<int64_t> shape(const std::string& name) const { return files_[where_.at(name)].shape(name); }
  at::Tensor tensor(const std::string& name) const { return files_[where_.at(name)].tensor(name); }

 private:
  void add_file(const std::string& path) {
    files_.push_back(io::SafetensorsFile::open(path));
    for (const std::string& name : files_.back().names()) {
      BERTH_CHECK(where_.emplace(name, files_.size() - 1).second, path, ": tensor ", name,
                  " is also in another shard. Fix: each tensor must be in exactly one shard");
    }
  }

  void add_shards(const fs::path& dir, const fs::path& index) {
    std::ifstream in(index);
    BERTH_CHECK(in.good(), index.string(), ": cannot open the shard index");
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      BERTH_FAIL(index.string(), ": not valid JSON (", e.what(), ")");
    }
    BERTH_CHECK(json.is_object() && json.contains("weight_map") && json["weight_map"].is_object(),
                index.string(), ": expected an object with \"weight_map\": {tensor name: shard file}");
    std::set<std::string> shards;
    for (const auto& [name, file] : json["weight_map"].items()) {
      BERTH_CHECK(file.is_string(), index.string(), ": weight_map[\"", name,
                  "\"] must be a file name, found ", file.dump());
      const std::string shard = file.get<std::string>();
      BERTH_CHECK(shard.find('/') == std::string::npos && shard != ".." && !shard.empty(), index.string(),
                  ": shard \"", shard, "\" must be a file name inside the model directory");
      shards.insert(shard);
    }
    for (const std::string& shard : shards) add_file((dir / shard).string());
  }

  std::vector<io::SafetensorsFile> files_;
  std::map<std::string, std::size_t> where_;  // tensor name -> files_ index
};

// HF renames a few legacy names on load (TensorFlow-era LayerNorm gamma/beta).
std::string modern_name(const std::string& name) {
  if (ends_with(name, "LayerNorm.gamma")) return name.substr(0, name.size() - 5) + "weight";
  if (ends_with(name, "LayerNorm.beta")) return name.substr(0, name.size() - 4) + "bias";
  return name;
}

// Names the layout drops silently: equal to an entry, or ending with "." + entry.
bool is_ignored(const CheckpointLayout& layout, const std::string& name) {
  for (const std::string& entry : layout.ignored)
    if (name == entry || ends_with(name, "." + entry)) return true;
  return false;
}

enum class PrefixMode {
  Same,            // checkpoint and model name tensors alike
  StripFromModel,  // a base-model checkpoint into a head model: the model's "bert.x" is the checkpoint's "x"
  AddToModel,      // a head checkpoint into the base model: the model's "x" is the checkpoint's "bert.x"
};

std::string checkpoint_name(PrefixMode mode, const std::string& prefix, const std::string& model_name) {
  switch (mode) {
    case PrefixMode::Same:
      return model_name;
    case PrefixMode::StripFromModel:
      return starts_with(model_name, prefix) ? model_name.substr(prefix.size()) : model_name;
    case PrefixMode::AddToModel:
      return prefix + model_name;
  }
  BERTH_BUG(false, "unknown PrefixMode");
}

void add_warnings(LoadReport& report, const std::string& model_name, const std::string& dir) {
  if (!report.unexpected.empty()) {
    report.warnings.push_back(
        "Some weights of the model checkpoint at " + dir + " were not used when initializing " + model_name +
        ": " + python_list(report.unexpected) + "\n- This IS expected if you are initializing " + model_name +
        " from the checkpoint of a model trained on another task or with another architecture (e.g. "
        "initializing a "
        "BertForSequenceClassification model from a BertForPreTraining model).\n- This IS NOT expected if "
        "you are "
        "initializing " +
        model_name +
        " from the checkpoint of a model that you expect to be exactly identical (initializing a "
        "BertForSequenceClassification model from a BertForSequenceClassification model).");
  }
  if (!report.missing.empty()) {
    report.warnings.push_back(
        "Some weights of " + model_name + " were not initialized from the model checkpoint at " + dir +
        " and are newly initialized: " + python_list(report.missing) +
        "\nYou should probably TRAIN this model on a down-stream task to be able to use it for "
        "predictions and inference.");
  }
  if (!report.mismatched.empty()) {
    std::string lines;
    for (const auto& m : report.mismatched) {
      lines += (lines.empty() ? "" : "\n") + std::string("- ") + m.name + ": found shape " +
               torch_size(m.checkpoint_shape) + " in the checkpoint and " + torch_size(m.model_shape) +
               " in the model instantiated";
    }
    report.warnings.push_back(
        "Some weights of " + model_name + " were not initialized from the model checkpoint at " + dir +
        " and are newly initialized because the shapes did not match:\n" + lines +
        "\nYou should probably TRAIN this model on a down-stream task to be able to use it for "
        "predictions and inference.");
  }
}

bool is_head_tensor(const CheckpointLayout& layout, const std::string& name) {
  for (const std::string& prefix : layout.head_prefixes)
    if (starts_with(name, prefix)) return true;
  return false;
}

bool only_head_mismatched(const std::vector<LoadReport::Mismatch>& mismatched,
                          const CheckpointLayout& layout) {
  for (const auto& m : mismatched)
    if (!is_head_tensor(layout, m.name)) return false;
  return true;
}

// The first few mismatches (a wrong hidden_size mismatches every tensor), then how many more.
std::string mismatch_error(const std::vector<LoadReport::Mismatch>& mismatched,
                           const CheckpointLayout& layout, const std::string& dir, int64_t num_labels) {
  constexpr size_t kShown = 3;
  std::ostringstream out;
  out << dir << ": " << mismatched.size() << " tensor" << (mismatched.size() == 1 ? "" : "s")
      << " in model.safetensors do not fit " << layout.architecture << " built from config.json:";
  for (size_t i = 0; i < mismatched.size() && i < kShown; ++i) {
    const auto& m = mismatched[i];
    out << "\n  " << m.name << ": checkpoint has " << format_shape(m.checkpoint_shape)
        << ", the model expects " << format_shape(m.model_shape);
  }
  if (mismatched.size() > kShown) out << "\n  ... and " << mismatched.size() - kShown << " more";
  out << "\nFix: ";
  if (only_head_mismatched(mismatched, layout)) {
    out << "the model has num_labels = " << num_labels
        << "; load with the checkpoint's own labels (leave num_labels/labels unset), or pass "
           "ignore_mismatched_sizes to start a new classifier for your labels";
  } else {
    out << "config.json does not describe these weights (compare its hidden_size, intermediate_size, "
           "vocab_size, num_attention_heads with the shapes above): use the config.json saved with them; a "
           "model of another size starts from scratch (berth train --model-preset with --config-overrides)";
  }
  return out.str();
}

// Which way the base-model prefix differs between checkpoint and model.
PrefixMode prefix_mode(const std::map<std::string, std::string>& stored,
                       const std::vector<NamedTensor>& tensors, const std::string& prefix) {
  if (prefix.empty()) return PrefixMode::Same;
  bool has_prefix = false;
  for (const auto& item : stored) has_prefix = has_prefix || starts_with(item.first, prefix);
  bool expects_prefix = false;
  for (const NamedTensor& t : tensors) expects_prefix = expects_prefix || starts_with(t.name, prefix);
  if (!has_prefix && expects_prefix) return PrefixMode::StripFromModel;
  if (has_prefix && !expects_prefix) return PrefixMode::AddToModel;
  return PrefixMode::Same;
}

}  // namespace

LoadReport load_weights(torch::nn::Module& module, const std::string& dir, const CheckpointLayout& layout,
                        const PretrainedOptions& options, int64_t num_labels) {
  LoadReport report;
  const Checkpoint checkpoint = Checkpoint::open(fs::path(dir));
  // Checkpoint names as HF sees them after its renames: modern name -> stored name.
  std::map<std::string, std::string> stored;
  for (const auto& [name, file] : checkpoint.names()) {
    if (is_ignored(layout, name)) continue;
    std::string modern = modern_name(name);
    if (layout.rename) modern = layout.rename(modern);
    if (modern != name) report.renamed.push_back(name + " -> " + modern);
    stored[modern] = name;
  }
  const std::vector<NamedTensor> tensors = module_tensors(module);
  const PrefixMode mode = prefix_mode(stored, tensors, layout.base_prefix);

  std::vector<std::pair<const NamedTensor*, std::string>> to_load;  // model tensor, stored name
  std::set<std::string> used;
  for (const NamedTensor& tensor : tensors) {
    const std::string name = checkpoint_name(mode, layout.base_prefix, tensor.name);
    auto found = stored.find(name);
    if (found == stored.end()) {
      report.missing.push_back(name);
      continue;
    }
    used.insert(name);
    const std::vector<int64_t> checkpoint_shape = checkpoint.shape(found->second);
    const std::vector<int64_t> model_shape = tensor.tensor.sizes().vec();
    if (checkpoint_shape != model_shape) {
      report.mismatched.push_back({name, checkpoint_shape, model_shape});
      continue;
    }
    to_load.emplace_back(&tensor, found->second);
  }
  for (const auto& [name, original] : stored)
    if (!used.count(name)) report.unexpected.push_back(original);
  // A new label count may start a new head; a model whose body is not the checkpoint's is refused, since
  // training it would start from random weights with nothing but a warning.
  const bool ignored = options.ignore_mismatched_sizes && only_head_mismatched(report.mismatched, layout);
  BERTH_CHECK(report.mismatched.empty() || ignored,
              mismatch_error(report.mismatched, layout, dir, num_labels));

  // HF initialises what the checkpoint does not provide; everything else is overwritten next.
  if ((!report.missing.empty() || !report.mismatched.empty()) && layout.init)
    layout.init(module, options.seed);
  torch::NoGradGuard no_grad;
  for (const auto& [target, name] : to_load) {
    at::Tensor value = checkpoint.tensor(name);
    BERTH_CHECK(at::isFloatingType(value.scalar_type()), dir, "/model.safetensors: tensor ", name,
                " has dtype ", dtype_name(value.scalar_type()), " but ", target->name,
                " holds floating-point weights. Fix: re-export the checkpoint");
    at::Tensor destination = target->tensor;
    destination.copy_(value.to(destination.scalar_type()));
  }
  add_warnings(report, layout.architecture, dir);
  return report;
}

std::string save_module_tensors(const torch::nn::Module& module, const std::string& dir_text) {
  std::map<std::string, at::Tensor> tensors;
  std::map<const void*, std::string> storages;
  std::optional<c10::ScalarType> dtype;
  for (const NamedTensor& named : module_tensors(module)) {
    const at::Tensor& t = named.tensor;
    BERTH_CHECK(
        t.device().type() != c10::kMeta, "save_pretrained: ", named.name,
        " is on the meta device (it holds no values). Fix: load or initialise the model before saving");
    // safetensors stores each tensor on its own: two names over the same memory would come back as two
    // independent tensors. A tied weight is therefore not a tensor of its own in berth's modules. (Distinct
    // slices of one buffer, as ZeRO-3 gathers a block's parameters, are not tied.)
    const void* storage = t.numel() > 0 ? t.data_ptr() : static_cast<const void*>(&named);
    auto [it, fresh] = storages.emplace(storage, named.name);
    BERTH_CHECK(
        fresh, "save_pretrained: ", named.name, " and ", it->second,
        " share memory (tied weights); safetensors would save them as two unrelated tensors. Fix: untie "
        "them (clone one) before saving");
    if (named.kind == TensorKind::Parameter && !dtype) dtype = t.scalar_type();
    tensors[named.name] = t.detach();
  }
  BERTH_BUG(dtype.has_value(), "a model without parameters");
  const fs::path dir(dir_text);
  std::error_code error;
  fs::create_directories(dir, error);
  BERTH_CHECK(!error && fs::is_directory(dir), dir_text, ": cannot create the model directory (",
              error ? error.message() : "a file has that name", "). Fix: choose a writable path");
  // The writer goes through a temporary file renamed into place.
  io::save_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
  return dtype_name(*dtype);
}

void save_weights(const torch::nn::Module& module, PretrainedConfig config, const CheckpointLayout& layout,
                  const std::string& dir) {
  config.torch_dtype = save_module_tensors(module, dir);
  config.architectures = std::vector<std::string>{layout.architecture};
  config.save((fs::path(dir) / "config.json").string());
}

void check_model_dir(const std::string& dir_text, const PretrainedOptions& options) {
  const fs::path dir(dir_text);
  BERTH_CHECK(fs::is_directory(dir), dir_text,
              ": not a directory. Fix: pass an HF model directory (config.json + model.safetensors)");
  BERTH_CHECK(fs::exists(dir / "config.json"), dir_text,
              ": no config.json. Fix: an HF model directory holds config.json next to model.safetensors");
  BERTH_CHECK(at::isFloatingType(options.dtype), "from_pretrained: dtype ", dtype_name(options.dtype),
              " is not a floating-point type. Fix: use float32, float64, bfloat16 or float16");
}

}  // namespace berth
