// The ZeRO paper's per-rank memory accounting for a run (Rajbhandari et al. 2020, section 3/5), BERT
// parameter counts without building a model, and the table that puts an estimate beside what a rank measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "berth/dist/gradient_sync.h"
#include "berth/model/bert_config.h"
#include "berth/train/precision_options.h"

namespace berth::train {

using dist::MemoryFootprint;

// Bytes one rank holds for training state between steps, by kind. Partitioned state is padded as berth
// partitions it: the flat array rounded up to a multiple of the world size (FlatLayout::padded_numel).
struct MemoryEstimate {
  // The inputs, for reports.
  int64_t num_params = 0;
  int64_t world_size = 1;
  int stage = 0;
  Precision precision = Precision::fp32;
  bool offload_optimizer = false;
  bool offload_param = false;

  int64_t parameters = 0;  // fp32: 4 bytes each; fp16/bf16: 2 (the working copy the model computes with)
  int64_t gradients = 0;   // same width as the parameters
  int64_t optimizer_states = 0;  // fp32: m and v (8); mixed precision: fp32 master + m + v (K = 12)
  int64_t on_host = 0;           // the part of the three above kept in host memory (offload)
  // Stage 3: the largest layer's full parameters, gathered around its forward and backward (not in total()).
  int64_t working_set = 0;

  int64_t total() const { return parameters + gradients + optimizer_states; }
  int64_t on_device() const { return total() - on_host; }
};

// Stage 0 (DDP) keeps everything whole; 1 partitions the optimizer states, 2 also the gradients, 3 also the
// parameters (each 1/world of the padded total). offload_optimizer puts the optimizer states on the host,
// offload_param (stage 3 only) the parameter partition. Throws berth::Error for num_params < 1, world_size
// < 1, stage outside 0-3, offload_optimizer at stage 0, offload_param below stage 3.
MemoryEstimate estimate_zero_memory(int64_t num_params, int64_t world_size, int stage, Precision precision,
                                    bool offload_optimizer, bool offload_param, int64_t largest_layer_params);

// Bytes per parameter of each kind for `precision` (the ZeRO paper's 2/2/12 for mixed precision, 4/4/8 fp32).
struct BytesPerParameter {
  int64_t parameters, gradients, optimizer_states;
};
BytesPerParameter bytes_per_parameter(Precision precision);

// BertForSequenceClassification's parameter count for `config` with `num_labels` outputs, from the shapes
// alone (embeddings, layers, pooler, classifier), equal to the built model's.
int64_t count_bert_parameters(const BertConfig& config, int64_t num_labels);
// The largest block ZeRO-3 gathers at once: the embeddings, one encoder layer, or the pooler + classifier.
int64_t largest_bert_layer_parameters(const BertConfig& config, int64_t num_labels);

// The estimate (and, when given, the measured footprint) in MB (10^6 bytes) with exact bytes, one line per
// kind, then the total, the host part and the stage-3 working set.
std::string format_memory_table(const MemoryEstimate& estimate,
                                const std::optional<MemoryFootprint>& measured);

// One JSON object: the inputs and every byte count ({"num_params":..,"parameters":..,...,"total":..}).
std::string memory_estimate_json(const MemoryEstimate& estimate);

}  // namespace berth::train
