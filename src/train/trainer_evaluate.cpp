// Trainer::evaluate and Trainer::predict: each rank predicts its share of the rows, the shares are gathered,
// and every rank computes the same metrics over the whole dataset.
#include "berth/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "berth/core/error.h"
#include "berth/data/data_loader.h"
#include "berth/data/distributed_sampler.h"
#include "berth/dist/gather_rows.h"
#include "berth/placement/place.h"
#include "berth/tasks/task_recipe.h"
#include "berth/train/callbacks.h"
#include "berth/train/mixed_precision.h"
#include "train/trainer_internal.h"

namespace berth::train {

std::map<std::string, double> Trainer::evaluate(const data::TokenizedDataset* dataset,
                                                const std::string& prefix) {
  const data::TokenizedDataset* data = dataset ? dataset : eval_dataset_.get();
  BERTH_CHECK(data,
              "Trainer::evaluate: no dataset to evaluate on. Fix: pass TrainerOptions::eval_dataset (--eval "
              "FILE) or a dataset to evaluate()");
  PredictionOutput output = predict(*data, prefix);
  if (!output.confusion.empty()) last_confusion_ = output.confusion;
  output.metrics[prefix + "_epoch"] = state_.epoch;
  std::map<std::string, double> metrics = output.metrics;
  metrics.erase(prefix + "_epoch");
  log(LogEntry(metrics.begin(), metrics.end()));
  callbacks_.on_evaluate(args_, state_, control_, metrics);
  return metrics;
}

data::DataLoaderOptions Trainer::eval_loader_options() const {
  data::DataLoaderOptions options;
  options.batch_size = static_cast<size_t>(args_.per_device_eval_batch_size);
  options.shuffle = false;
  options.seed = static_cast<uint64_t>(args_.resolved_data_seed());  // a masked LM's masks
  options.prefetch = static_cast<size_t>(args_.dataloader_prefetch);
  options.rank = static_cast<size_t>(comm().rank());
  options.world_size = static_cast<size_t>(comm().world_size());
  if (tokenizer_) options.pad_token_id = tokenizer_->pad_token_id();
  set_task_labels(options);
  return options;
}

void Trainer::set_task_labels(data::DataLoaderOptions& options) const {
  options.labels = tasks::task_recipe(model_->info().task).traits().batch_labels;
  if (options.labels != data::BatchLabels::MaskedTokens) return;
  BERTH_CHECK(
      tokenizer_ && tokenizer_->special_tokens.mask,
      "Trainer: a masked LM masks tokens with its tokenizer's mask token, and ",
      tokenizer_ ? "this tokenizer has none (tokenizer_config.json's mask_token)" : "no tokenizer was given",
      ". Fix: pass the tokenizer (TrainerOptions::tokenizer) of a vocabulary with a mask token ([MASK] or "
      "<mask>)");
  options.mlm = masking_;
  options.mlm.mask_token_id = tokenizer_->token_id(*tokenizer_->special_tokens.mask);
  options.mlm.vocab_size = static_cast<int64_t>(tokenizer_->vocab_size());
}

namespace {

// The speed metrics HF adds to every evaluation.
void add_speed_metrics(PredictionOutput& output, const std::string& prefix, detail::Clock::time_point start,
                       int64_t rows, int64_t batches) {
  const double runtime = detail::seconds_since(start);
  output.metrics[prefix + "_runtime"] = runtime;
  output.metrics[prefix + "_samples_per_second"] = runtime > 0 ? static_cast<double>(rows) / runtime : 0.0;
  output.metrics[prefix + "_steps_per_second"] = runtime > 0 ? static_cast<double>(batches) / runtime : 0.0;
}

// Every rank's logits in dataset order: (N, C), or per-token logits padded to the dataset's longest row
// (gather_token_logits): (N, T, C).
at::Tensor gather_logits(dist::Communicator& comm, const std::vector<size_t>& my_rows,
                         const std::vector<at::Tensor>& logits, const data::TokenizedDataset& dataset,
                         int64_t num_labels) {
  const auto rows = static_cast<int64_t>(dataset.size());
  if (logits.empty() || logits.front().dim() == 2)
    return dist::gather_rows(comm, my_rows, logits.empty() ? at::empty({0, num_labels}) : at::cat(logits),
                             rows, num_labels);
  int64_t length = 0;
  for (const auto& e : dataset.encodings()) length = std::max(length, static_cast<int64_t>(e.ids.size()));
  return detail::gather_token_logits(comm, my_rows, logits, rows, length, logits.front().size(2));
}

}  // namespace

PredictionOutput Trainer::predict(const data::TokenizedDataset& dataset, const std::string& prefix) {
  check_device_holds_data("Trainer::predict");
  switch (tasks::task_recipe(model_->info().task).traits().evaluation) {
    case tasks::Evaluation::Loss:
      return predict_language_model(dataset, prefix);
    case tasks::Evaluation::TokenLogits:
      return predict_tokens(dataset, prefix);
    case tasks::Evaluation::RowLogits:
    case tasks::Evaluation::SpanLogits:
      break;
  }
  return predict_classes(dataset, prefix);
}

// A language model's evaluation is its loss (and perplexity): the logits, (N, T, vocab), are not kept (and a
// masked LM decodes only its labeled tokens, LossOnlyForward). As in
// HF's evaluation loop, each batch's mean loss counts once per row of the batch, and the mean is over the
// dataset's rows (a row the sampler repeats to even out the ranks counts once).
PredictionOutput Trainer::predict_language_model(const data::TokenizedDataset& dataset,
                                                 const std::string& prefix) {
  const auto start = detail::Clock::now();
  const data::DataLoaderOptions options = eval_loader_options();
  const std::vector<size_t> my_rows = detail::eval_rows(options, dataset.size());
  data::DataLoader loader(dataset, options);
  model_->module().eval();
  torch::NoGradGuard no_grad;
  const LossOnlyForward loss_only(*model_, !loss_reads_logits());
  std::vector<float> row_losses;
  int64_t batches = 0;
  for (const Batch& cpu_batch : loader) {
    const Batch batch = place_batch(cpu_batch, device_, PlacementPolicy::Move);
    const AutocastGuard autocast(precision_.precision, device_.type());
    const TaskOutput out = model_->forward_batch(batch);
    const auto loss = task_loss(out.logits, batch_input(batch, "labels"), out.loss)
                          .detach()
                          .to(at::kCPU)
                          .to(at::kFloat)
                          .item<float>();
    row_losses.insert(row_losses.end(), static_cast<size_t>(batch.at("input_ids").size(0)), loss);
    ++batches;
  }
  const at::Tensor mine = at::tensor(row_losses, at::kFloat).reshape({-1, 1});
  const at::Tensor all = dist::gather_rows(comm(), my_rows, mine, static_cast<int64_t>(dataset.size()), 1);
  PredictionOutput output;
  const double loss = dataset.size() > 0 ? all.mean().item<double>() : 0.0;
  output.metrics[prefix + "_loss"] = loss;
  // run_clm.py's perplexity: exp(eval_loss), infinite when that overflows.
  output.metrics[prefix + "_perplexity"] = std::exp(loss);
  add_speed_metrics(output, prefix, start, static_cast<int64_t>(row_losses.size()), batches);
  return output;
}

PredictionOutput Trainer::predict_classes(const data::TokenizedDataset& dataset, const std::string& prefix) {
  const auto start = detail::Clock::now();
  // Each rank predicts its share of the rows; the shares are gathered so that every rank computes the same
  // metrics over the whole dataset.
  const data::DataLoaderOptions options = eval_loader_options();
  const std::vector<size_t> my_rows = detail::eval_rows(options, dataset.size());
  data::DataLoader loader(dataset, options);
  model_->module().eval();
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> logits;
  int64_t rows = 0;
  int64_t batches = 0;
  const bool labeled = dataset.labels().defined();
  for (const Batch& cpu_batch : loader) {
    const Batch batch = place_batch(cpu_batch, device_, PlacementPolicy::Move);
    const AutocastGuard autocast(precision_.precision, device_.type());  // evaluation computes as training
    Batch inputs = batch;
    for (const char* label : {"labels", "start_positions", "end_positions"})
      inputs.erase(label);  // the loss comes from the gathered logits below
    const TaskOutput out = model_->forward_batch(inputs);
    const int64_t n = batch.at("input_ids").size(0);
    rows += n;
    ++batches;
    logits.push_back(out.logits.detach().to(at::kCPU).to(at::kFloat));  // metrics follow on the CPU
  }
  PredictionOutput output;
  const TaskModelInfo info = model_->info();
  const auto num_labels = static_cast<int64_t>(info.labels.size());
  output.logits = gather_logits(comm(), my_rows, logits, dataset, num_labels);
  // Question answering's (N, T, 2) start/end logits have no classes: its metrics come from compute_metrics.
  const bool spans = tasks::task_recipe(info.task).traits().evaluation == tasks::Evaluation::SpanLogits;
  const std::string problem = spans ? std::string("question_answering") : info.problem_type;
  if (problem == kSingleLabelClassification) {
    output.probabilities = output.logits.softmax(-1);
    output.predictions = output.logits.argmax(-1);
  } else if (problem == kMultiLabelClassification) {
    output.probabilities = output.logits.sigmoid();
  }
  if (labeled) {
    output.label_ids = dataset.labels();
    // The loss over the whole dataset from the gathered logits: the same number on every rank.
    output.metrics[prefix + "_loss"] =
        dataset.size() > 0 ? task_loss(output.logits, output.label_ids, {}).item<double>() : 0.0;
    for (const auto& [name, value] : tasks::task_recipe(info.task).metrics(
             {output.logits, output.label_ids, &dataset}, info, &output.confusion))
      output.metrics[prefix + "_" + name] = value;
    if (compute_metrics_) {
      for (const auto& [name, value] : compute_metrics_({output.logits, output.label_ids, &dataset}))
        output.metrics[prefix + "_" + name] = value;
    }
  }
  add_speed_metrics(output, prefix, start, rows, batches);
  return output;
}

namespace detail {

std::vector<size_t> eval_rows(const data::DataLoaderOptions& options, size_t dataset_size) {
  data::DistributedSamplerOptions share;
  share.rank = options.rank;
  share.world_size = options.world_size;
  share.shuffle = false;
  return data::DistributedSampler(dataset_size, share).indices();
}

at::Tensor gather_token_logits(dist::Communicator& comm, const std::vector<size_t>& my_rows,
                               const std::vector<at::Tensor>& batches, int64_t rows, int64_t length,
                               int64_t classes) {
  std::vector<at::Tensor> padded;  // each (B, length * classes)
  for (const at::Tensor& batch : batches) {
    const at::Tensor full = at::constant_pad_nd(batch, {0, 0, 0, length - batch.size(1)}, -100);
    padded.push_back(full.reshape({full.size(0), length * classes}));
  }
  return dist::gather_rows(comm, my_rows, padded.empty() ? at::empty({0, length * classes}) : at::cat(padded),
                           rows, length * classes)
      .reshape({rows, length, classes});
}

}  // namespace detail

}  // namespace berth::train
