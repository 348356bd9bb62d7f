// TrainerRunner: a Trainer built for one evaluation or prediction of a trained model.
#include "train/trainer_runner.h"

#include "berth/train/trainer.h"

namespace berth::train {

tasks::PredictionOutput TrainerRunner::predict(std::shared_ptr<TaskModel> model,
                                               const tokenizer::Tokenizer& tokenizer,
                                               const data::TokenizedDataset& dataset,
                                               const tasks::ComputeMetrics& compute_metrics,
                                               const std::string& prefix) {
  TrainerOptions trainer_options;
  trainer_options.args.output_dir = options_.model_dir;
  trainer_options.args.per_device_eval_batch_size = static_cast<int64_t>(options_.batch_size);
  trainer_options.args.device = options_.device;
  trainer_options.args.bf16 = options_.bf16;
  trainer_options.args.seed = options_.seed;
  trainer_options.model = std::move(model);
  trainer_options.tokenizer = tokenizer;
  trainer_options.compute_metrics = compute_metrics;
  trainer_options.masking.mlm_probability = options_.masking.mlm_probability;
  trainer_options.masking.whole_word_mask = options_.masking.whole_word_mask;
  Trainer trainer(std::move(trainer_options));
  return trainer.predict(dataset, prefix);
}

}  // namespace berth::train
