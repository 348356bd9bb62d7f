// DecoderTaskModel: the decoder families' heads on the base model's last hidden state, HF's losses, info and
// saving.
#include "berth/model/decoder_task_model.h"

#include "berth/core/error.h"
#include "berth/model/decoder_heads.h"
#include "berth/model/problem_type.h"
#include "berth/model/sequence_classification_loss.h"

#include <torch/torch.h>

namespace berth {
namespace {

torch::nn::Linear unbiased_linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

DecoderTaskModel::DecoderTaskModel(PretrainedConfig config, ModelTask task, CheckpointLayout layout)
    : config_(std::move(config)), task_(task), layout_(std::move(layout)) {
  BERTH_BUG(task_ == ModelTask::CausalLM || task_ == ModelTask::SequenceClassification,
            "a decoder built for ", task_name(task_));
}

void DecoderTaskModel::add_head(const DecoderShape& shape, const DecoderBlocks& blocks) {
  BERTH_BUG(!blocks.embeddings.empty(), "a decoder without an embeddings block");
  shape_ = shape;
  if (task_ == ModelTask::SequenceClassification)
    score = register_module("score", unbiased_linear(shape.hidden_size, config_.num_labels()));
  else if (!shape.tie_word_embeddings)
    lm_head = register_module("lm_head", unbiased_linear(shape.hidden_size, shape.vocab_size));
  word_embeddings_block_ = blocks.embeddings.front();
  blocks_ = blocks.embeddings;
  blocks_.insert(blocks_.end(), blocks.layers.begin(), blocks.layers.end());
  blocks_.push_back(blocks.final_norm);
  if (score) blocks_.push_back("score");
  if (lm_head) blocks_.push_back("lm_head");
  // The tied head uses the word embeddings' block again, last.
  if (task_ == ModelTask::CausalLM && !lm_head) blocks_.push_back(word_embeddings_block_);
}

at::Tensor DecoderTaskModel::head_logits(const at::Tensor& hidden, const at::Tensor& input_ids) {
  LayerHooks* hooks = hooks_.get();
  if (task_ == ModelTask::CausalLM) {
    // (B, T, C) -> (B, T, vocab); a tied head multiplies by the embedding matrix itself, as a second use of
    // its block.
    if (lm_head)
      return run_hook_block(hooks, "lm_head", hidden,
                            [&](const at::Tensor& x) { return at::linear(x, lm_head->weight); });
    return run_hook_block(hooks, word_embeddings_block_, hidden,
                          [&](const at::Tensor& x) { return at::linear(x, word_embeddings()); });
  }
  // (B, T, C) -> (B, T, num_labels) -> (B, num_labels) at each row's last non-pad token
  const at::Tensor all = run_hook_block(hooks, "score", hidden,
                                        [&](const at::Tensor& x) { return at::linear(x, score->weight); });
  const at::Tensor rows = torch::arange(all.size(0), input_ids.options().dtype(at::kLong));
  const at::Tensor last = last_non_pad_positions(input_ids, shape_.pad_token_id, layout_.architecture);
  return all.index({rows, last.to(at::kLong)});
}

TaskOutput DecoderTaskModel::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                     const at::Tensor& labels) {
  const at::Tensor logits = head_logits(hidden_states(input_ids, attention_mask, hooks_.get()), input_ids);
  if (!labels.defined()) return {logits, {}};
  return {logits, loss(logits, labels)};
}

TaskOutput DecoderTaskModel::forward_batch(const Batch& batch) {
  return forward(batch_input_ids(batch, layout_.architecture), batch_input(batch, "attention_mask"),
                 batch_input(batch, "labels"));
}

at::Tensor DecoderTaskModel::loss(const at::Tensor& logits, const at::Tensor& labels) {
  if (task_ == ModelTask::CausalLM) return causal_lm_loss(logits, labels);
  return sequence_classification_loss(logits, labels, config_.problem_type);
}

TaskModelInfo DecoderTaskModel::info() const {
  TaskModelInfo info;
  info.architecture = layout_.architecture;
  info.task = task_;
  if (task_ == ModelTask::SequenceClassification) {
    info.problem_type = problem_type_or_default(config_.problem_type, config_.num_labels());
    for (const auto& [id, label] : config_.id2label) info.labels.push_back(label);
  }
  info.max_positions = shape_.max_positions;
  info.summary = model_summary(shape_.num_layers, shape_.hidden_size, shape_.vocab_size);
  return info;
}

void DecoderTaskModel::save_pretrained(const std::string& dir) const {
  save_weights(*this, config_, layout_, dir);
}

}  // namespace berth
