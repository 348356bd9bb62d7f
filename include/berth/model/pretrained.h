// from_pretrained / save_pretrained: HF model directories (config.json + model.safetensors) in and out.
#pragma once

#include "berth/model/bert_config.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_model.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace berth {

struct PretrainedOptions {
  // The model's dtype; checkpoint tensors are converted to it. float32 by default, as in HF.
  c10::ScalarType dtype = c10::ScalarType::Float;
  // HF's from_pretrained(num_labels=...) / (id2label=...): replace the config's labels before the model is
  // built (a different count gives a classifier of a different shape: see ignore_mismatched_sizes).
  std::optional<int64_t> num_labels;
  std::optional<std::vector<std::string>> labels;
  // The config's problem_type for a classification head (kSingleLabelClassification, ...), replacing the
  // checkpoint's: the training data decides it.
  std::optional<std::string> problem_type;
  // Task-head tensors whose shape differs from the checkpoint's (a new label count) are re-initialised (and
  // reported) instead of refused. Unlike HF, a mismatch outside the head is refused even so: config.json does
  // not describe the weights, and the model would train from random ones with nothing but a warning.
  bool ignore_mismatched_sizes = false;
  // Seed for tensors the checkpoint lacks (newly initialised, e.g. a new classifier); nullopt: torch's
  // global generator, as HF.
  std::optional<uint64_t> seed;
};

// What from_pretrained found, in the checkpoint's naming (as HF reports it).
struct LoadReport {
  struct Mismatch {
    std::string name;
    std::vector<int64_t> checkpoint_shape;
    std::vector<int64_t> model_shape;
  };
  std::vector<std::string> missing;     // the model's tensors absent from the checkpoint: newly initialised
  std::vector<std::string> unexpected;  // checkpoint tensors the model has no place for: ignored
  std::vector<Mismatch> mismatched;  // shape differs (only with ignore_mismatched_sizes): newly initialised
  std::vector<std::string>
      renamed;  // legacy names read under today's: "x.LayerNorm.gamma -> x.LayerNorm.weight"
  // HF's warning texts, one entry per finding (unexpected, missing, mismatched), plus config.json's warnings.
  std::vector<std::string> warnings;

  bool clean() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};

template <typename Model>
struct Pretrained {
  Model model{nullptr};
  LoadReport report;
};

// Loads an HF model directory: config.json and model.safetensors (or sharded: model.safetensors.index.json).
// Like HF, a BertModel checkpoint (no "bert." prefix) loads into BertForSequenceClassification (the
// classifier is then newly initialised) and a classifier or pretraining checkpoint loads into BertModel (its
// heads are unexpected, and ignored). LayerNorm gamma/beta are read as weight/bias. A shape mismatch throws
// berth::Error naming the tensor and both shapes unless ignore_mismatched_sizes and only the head differs
// (config.json describing other weights is always refused); a directory with only
// pytorch_model.bin throws with the conversion command.
template <typename Model>
Pretrained<Model> from_pretrained(const std::string& dir, const PretrainedOptions& options = {});

extern template Pretrained<BertModel> from_pretrained<BertModel>(const std::string&,
                                                                 const PretrainedOptions&);
extern template Pretrained<BertForSequenceClassification> from_pretrained<BertForSequenceClassification>(
    const std::string&, const PretrainedOptions&);

// Writes config.json (architectures and torch_dtype set as HF's save_pretrained does) and model.safetensors
// (metadata {"format": "pt"}) into `dir`, creating it. Each file goes to a temporary name first and is
// renamed into place. HF transformers loads the result with no missing or unexpected keys.
void save_pretrained(const BertModelImpl& model, const std::string& dir);
void save_pretrained(const BertForSequenceClassificationImpl& model, const std::string& dir);
inline void save_pretrained(const BertModel& model, const std::string& dir) { save_pretrained(*model, dir); }
inline void save_pretrained(const BertForSequenceClassification& model, const std::string& dir) {
  save_pretrained(*model, dir);
}

}  // namespace berth
