// The Trainer as the task recipes' ModelRunner: a model directory evaluated or predicted on one process, at
// the batch size, device and precision of `berth eval` / `berth predict`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "berth/data/mask_tokens.h"
#include "berth/tasks/model_runner.h"
#include "berth/tokenizer/tokenizer.h"

namespace berth::train {

struct RunnerOptions {
  std::string model_dir;  // the Trainer's output_dir: the model's own directory, where nothing is written
  size_t batch_size = 32;
  std::string device = "auto";
  bool bf16 = false;
  int64_t seed = 42;                // a masked LM's masks
  data::MaskTokensOptions masking;  // masked-lm: which tokens are masked
};

class TrainerRunner final : public tasks::ModelRunner {
 public:
  explicit TrainerRunner(RunnerOptions options) : options_(std::move(options)) {}
  tasks::PredictionOutput predict(std::shared_ptr<TaskModel> model, const tokenizer::Tokenizer& tokenizer,
                                  const data::TokenizedDataset& dataset,
                                  const tasks::ComputeMetrics& compute_metrics,
                                  const std::string& prefix) override;

 private:
  RunnerOptions options_;
};

}  // namespace berth::train
