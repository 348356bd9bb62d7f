// Predictor: a fine-tuned sequence classifier in an HF model directory, ready to label text on a device.
#pragma once

#include <c10/core/Device.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "berth/model/generate.h"
#include "berth/model/pretrained.h"
#include "berth/model/task_model.h"
#include "berth/tokenizer/tokenizer.h"

namespace berth {

struct PredictorOptions {
  std::string device = "auto";  // auto, cpu, cuda, cuda:N (as `berth doctor --device` takes it)
  size_t batch_size = 32;
  // Longest input in tokens, special tokens included; 0: the smaller of the tokenizer's model_max_length and
  // the model's max_position_embeddings. Longer inputs are truncated (longest_first, as HF pipelines do).
  size_t max_length = 0;
  // Head+tail truncation (TruncationOptions::keep_head), as the model was trained; nullopt: end cut off.
  std::optional<size_t> keep_head = std::nullopt;
  // Causal LMs: how the continuation is decoded (the tokenizer's EOS stops it when eos_token_id is unset).
  GenerateOptions generate;
};

// One input's result. Single-label: softmax probabilities, label = the most probable; multi-label: sigmoid
// probabilities, label = the most probable, labels = every label over 0.5; regression: value = the logit.
// Causal LM: generated_text = the input text and its continuation (HF's text-generation pipeline), and the
// continuation's ids.
struct Prediction {
  std::string label;
  int64_t label_id = -1;
  std::vector<std::string> labels;  // multi-label only (possibly empty: no label over 0.5)
  bool multi_label = false;
  std::optional<double> value;
  std::vector<float> logits;
  std::vector<float> probabilities;
  std::optional<std::string> generated_text;
  std::vector<int64_t> generated_ids;
};

class Predictor {
 public:
  // Reads dir/config.json, dir/model.safetensors and the tokenizer files in dir (tokenizer.json and/or
  // vocab.txt, tokenizer_config.json) and places the model on options.device in eval mode.
  static Predictor load(const std::string& dir, const PredictorOptions& options = {});

  // Results in input order, computed options.batch_size inputs at a time.
  std::vector<Prediction> predict(const std::vector<tokenizer::EncodeInput>& inputs) const;

  const TaskModelInfo& info() const { return info_; }
  const TaskModel& model() const { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  const LoadReport& load_report() const { return report_; }
  c10::Device device() const { return device_; }
  const std::string& problem_type() const { return info_.problem_type; }

 private:
  Predictor(std::shared_ptr<TaskModel> model, tokenizer::Tokenizer tokenizer, LoadReport report,
            c10::Device device, const PredictorOptions& options);
  std::vector<Prediction> generate_texts(const std::vector<tokenizer::EncodeInput>& inputs) const;

  std::shared_ptr<TaskModel> model_;
  TaskModelInfo info_;
  tokenizer::Tokenizer tokenizer_;
  LoadReport report_;
  c10::Device device_;
  size_t batch_size_;
  GenerateOptions generate_;
};

}  // namespace berth
