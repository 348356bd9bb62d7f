// ZeRO memory accounting, BERT parameter counts from a config, and the estimate/measured table.
#include "berth/train/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/error.h"

namespace berth::train {
namespace {

std::string bytes_text(int64_t bytes) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f MB (%lld B)", static_cast<double>(bytes) / 1e6,
                static_cast<long long>(bytes));
  return buffer;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

BytesPerParameter bytes_per_parameter(Precision precision) {
  if (precision == Precision::fp32) return {4, 4, 8};
  return {2, 2, 12};
}

MemoryEstimate estimate_zero_memory(int64_t num_params, int64_t world_size, int stage, Precision precision,
                                    bool offload_optimizer, bool offload_param,
                                    int64_t largest_layer_params) {
  BERTH_CHECK(num_params >= 1, "memory estimate: the model must have at least one parameter, found ",
              num_params, ". Fix: pass the model's parameter count");
  BERTH_CHECK(world_size >= 1, "memory estimate: world size must be >= 1, found ", world_size,
              ". Fix: e.g. --world-size 2");
  BERTH_CHECK(stage >= 0 && stage <= 3, "memory estimate: ZeRO stage must be 0, 1, 2 or 3, found ", stage,
              ". Fix: e.g. --stage 1");
  BERTH_CHECK(
      !offload_optimizer || stage >= 1,
      "memory estimate: offloading the optimizer needs ZeRO stage 1, 2 or 3, found stage 0. Fix: e.g. "
      "--stage 1 --offload-optimizer");
  BERTH_CHECK(!offload_param || stage == 3,
              "memory estimate: offloading parameters needs ZeRO stage 3, found stage ", stage,
              ". Fix: --stage 3 --offload-param");
  BERTH_CHECK(largest_layer_params >= 0, "memory estimate: largest_layer_params must be >= 0, found ",
              largest_layer_params);
  MemoryEstimate estimate;
  estimate.num_params = num_params;
  estimate.world_size = world_size;
  estimate.stage = stage;
  estimate.precision = precision;
  estimate.offload_optimizer = offload_optimizer;
  estimate.offload_param = offload_param;
  const BytesPerParameter bytes = bytes_per_parameter(precision);
  // berth's partition: the flat array padded to a multiple of the world size, 1/world per rank.
  const int64_t shard = (num_params + world_size - 1) / world_size;
  estimate.optimizer_states = (stage >= 1 ? shard : num_params) * bytes.optimizer_states;
  estimate.gradients = (stage >= 2 ? shard : num_params) * bytes.gradients;
  estimate.parameters = (stage >= 3 ? shard : num_params) * bytes.parameters;
  if (offload_optimizer) estimate.on_host += estimate.optimizer_states;
  if (offload_param) estimate.on_host += estimate.parameters;
  if (stage == 3) estimate.working_set = std::min(largest_layer_params, num_params) * bytes.parameters;
  return estimate;
}

int64_t count_bert_parameters(const BertConfig& config, int64_t num_labels) {
  const int64_t hidden = config.hidden_size;
  const int64_t embeddings =
      (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * hidden + 2 * hidden;
  // q, k, v and the attention output (each H x H + H), two LayerNorms, the feed-forward pair.
  const int64_t layer = 4 * (hidden * hidden + hidden) + 2 * (2 * hidden) +
                        (hidden * config.intermediate_size + config.intermediate_size) +
                        (config.intermediate_size * hidden + hidden);
  const int64_t pooler = hidden * hidden + hidden;
  const int64_t classifier = hidden * num_labels + num_labels;
  return embeddings + config.num_hidden_layers * layer + pooler + classifier;
}

int64_t largest_bert_layer_parameters(const BertConfig& config, int64_t num_labels) {
  const int64_t hidden = config.hidden_size;
  const int64_t embeddings =
      (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * hidden + 2 * hidden;
  const int64_t layer = 4 * (hidden * hidden + hidden) + 4 * hidden +
                        (hidden * config.intermediate_size + config.intermediate_size) +
                        (config.intermediate_size * hidden + hidden);
  const int64_t head = hidden * hidden + hidden + hidden * num_labels + num_labels;
  return std::max({embeddings, config.num_hidden_layers > 0 ? layer : int64_t{0}, head});
}

std::string format_memory_table(const MemoryEstimate& estimate,
                                const std::optional<MemoryFootprint>& measured) {
  const size_t label_width = 24, column_width = 32;
  std::ostringstream out;
  out << pad("", label_width) << (measured ? pad("estimate", column_width) + "measured" : "estimate") << "\n";
  const auto row = [&](const char* label, int64_t estimated, std::optional<int64_t> held) {
    out << pad(label, label_width)
        << (held ? pad(bytes_text(estimated), column_width) : bytes_text(estimated));
    if (held) out << bytes_text(*held);
    out << "\n";
  };
  const auto held = [&](int64_t MemoryFootprint::*field) -> std::optional<int64_t> {
    if (!measured) return std::nullopt;
    return (*measured).*field;
  };
  row("parameters", estimate.parameters, held(&MemoryFootprint::parameters));
  row("gradients", estimate.gradients, held(&MemoryFootprint::gradients));
  row("optimizer states", estimate.optimizer_states, held(&MemoryFootprint::optimizer_states));
  row("total", estimate.total(), measured ? std::optional<int64_t>(measured->total()) : std::nullopt);
  row("  on host (offload)", estimate.on_host, std::nullopt);
  row("  on device", estimate.on_device(), std::nullopt);
  if (estimate.stage == 3) row("working set (stage 3)", estimate.working_set, std::nullopt);
  return out.str();
}

std::string memory_estimate_json(const MemoryEstimate& estimate) {
  nlohmann::ordered_json json;
  json["num_params"] = estimate.num_params;
  json["world_size"] = estimate.world_size;
  json["stage"] = estimate.stage;
  json["precision"] = to_string(estimate.precision);
  json["offload_optimizer"] = estimate.offload_optimizer;
  json["offload_param"] = estimate.offload_param;
  json["parameters"] = estimate.parameters;
  json["gradients"] = estimate.gradients;
  json["optimizer_states"] = estimate.optimizer_states;
  json["total"] = estimate.total();
  json["on_host"] = estimate.on_host;
  json["on_device"] = estimate.on_device();
  json["working_set"] = estimate.working_set;
  return json.dump();
}

}  // namespace berth::train
