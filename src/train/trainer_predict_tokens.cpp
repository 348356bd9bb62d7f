// Trainer::predict for token classification: (N, T, C) logits gathered across batches and ranks, padded with
// -100 to one length as HF's nested_concat(padding_index=-100) pads them, and the task's metrics
// (run_ner.py's seqeval scores).
#include <torch/torch.h>

#include "berth/data/data_loader.h"
#include "berth/data/word_tag_dataset.h"
#include "berth/placement/place.h"
#include "berth/tasks/task_recipe.h"
#include "berth/train/mixed_precision.h"
#include "berth/train/trainer.h"
#include "train/trainer_internal.h"

namespace berth::train {
namespace {

// The longest batch any rank can see: every row's encoding, rounded up as the collator rounds.
int64_t token_eval_length(const data::TokenizedDataset& dataset, size_t pad_to_multiple_of) {
  size_t longest = 1;
  for (const auto& e : dataset.encodings()) longest = std::max(longest, e.size());
  if (pad_to_multiple_of > 0)
    longest = (longest + pad_to_multiple_of - 1) / pad_to_multiple_of * pad_to_multiple_of;
  return static_cast<int64_t>(longest);
}

}  // namespace

PredictionOutput Trainer::predict_tokens(const data::TokenizedDataset& dataset, const std::string& prefix) {
  const auto start = detail::Clock::now();
  const data::DataLoaderOptions options = eval_loader_options();
  const std::vector<size_t> my_rows = detail::eval_rows(options, dataset.size());
  const int64_t length = token_eval_length(dataset, options.pad_to_multiple_of);
  const TaskModelInfo info = model_->info();
  const auto classes = static_cast<int64_t>(info.labels.size());
  data::DataLoader loader(dataset, options);
  model_->module().eval();
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> logits;  // each (B, T_b, classes)
  int64_t batches = 0;
  for (const Batch& cpu_batch : loader) {
    Batch inputs = place_batch(cpu_batch, device_, PlacementPolicy::Move);
    inputs.erase("labels");  // the loss comes from the gathered logits below
    const AutocastGuard autocast(precision_.precision, device_.type());
    logits.push_back(model_->forward_batch(inputs).logits.detach().to(at::kCPU).to(at::kFloat));
    ++batches;
  }
  PredictionOutput output;
  const auto rows = static_cast<int64_t>(dataset.size());
  output.logits = detail::gather_token_logits(comm(), my_rows, logits, rows, length, classes);
  output.predictions = output.logits.argmax(-1);
  if (dataset.labels().defined()) {
    std::vector<size_t> all(dataset.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    output.label_ids = data::collate_token_labels(dataset.labels(), all, length);  // (N, length), -100 padded
    output.metrics[prefix + "_loss"] =
        rows > 0 ? task_loss(output.logits, output.label_ids, {}).item<double>() : 0.0;
    for (const auto& [name, value] : tasks::task_recipe(info.task).metrics(
             {output.logits, output.label_ids, &dataset}, info, &output.confusion))
      output.metrics[prefix + "_" + name] = value;
    if (compute_metrics_)
      for (const auto& [name, value] : compute_metrics_({output.logits, output.label_ids, &dataset}))
        output.metrics[prefix + "_" + name] = value;
  }
  const double runtime = detail::seconds_since(start);
  output.metrics[prefix + "_runtime"] = runtime;
  output.metrics[prefix + "_samples_per_second"] =
      runtime > 0 ? static_cast<double>(my_rows.size()) / runtime : 0.0;
  output.metrics[prefix + "_steps_per_second"] = runtime > 0 ? static_cast<double>(batches) / runtime : 0.0;
  return output;
}

}  // namespace berth::train
