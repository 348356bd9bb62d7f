// What every TaskModel shares: reading a batch's inputs, the size summary, and parameter counts (HF's FLOP
// count and ZeRO-3's largest gather).
#include "berth/model/task_model.h"

#include "berth/core/error.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>

#include <algorithm>
#include <map>
#include <set>

namespace berth {

at::Tensor batch_input(const Batch& batch, const std::string& name) {
  auto it = batch.find(name);
  return it == batch.end() ? at::Tensor() : it->second;
}

const at::Tensor& batch_input_ids(const Batch& batch, const std::string& model) {
  auto ids = batch.find("input_ids");
  if (ids != batch.end()) return ids->second;
  std::string names;
  for (const auto& [name, tensor] : batch) names += (names.empty() ? "" : ", ") + name;
  BERTH_FAIL(model, ": the batch has no input_ids (it has ", names.empty() ? "nothing" : names,
             "). Fix: tokenise the text into input_ids (and attention_mask)");
}

std::string model_summary(int64_t layers, int64_t hidden_size, int64_t vocab_size) {
  return std::to_string(layers) + " layers, hidden " + std::to_string(hidden_size) + ", vocab " +
         std::to_string(vocab_size);
}

int64_t non_embedding_parameters(TaskModel& model) {
  std::set<std::string> embeddings;
  for (const auto& item : model.module().named_modules())
    if (dynamic_cast<const torch::nn::EmbeddingImpl*>(item.value().get()) != nullptr)
      embeddings.insert(item.key().empty() ? "weight" : item.key() + ".weight");
  int64_t count = 0;
  for (const auto& item : model.module().named_parameters())
    if (embeddings.count(item.key()) == 0) count += item.value().numel();
  return count;
}

int64_t largest_block_parameters(TaskModel& model) {
  const std::vector<std::string> uses = model.hook_blocks();
  std::map<std::string, int64_t> per_block;  // parameters outside blocks ("") stay whole: not counted
  for (const auto& item : model.module().named_parameters())
    per_block[block_of(uses, item.key())] += item.value().numel();
  int64_t largest = 0;
  for (size_t i = 0; i < uses.size(); ++i) {
    int64_t held = per_block[uses[i]];
    // A block used again (a tied decoder) may run nested in the use before it (the head holding its bias):
    // both are gathered then.
    if (i > 0 && std::find(uses.begin(), uses.begin() + static_cast<std::ptrdiff_t>(i), uses[i]) !=
                     uses.begin() + static_cast<std::ptrdiff_t>(i))
      held += per_block[uses[i - 1]];
    largest = std::max(largest, held);
  }
  return largest;
}

}  // namespace berth
