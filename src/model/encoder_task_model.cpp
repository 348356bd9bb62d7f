// EncoderTaskModel: batch reading, input checks, HF's task losses, info and saving shared by the encoder
// families.
#include "berth/model/encoder_task_model.h"

#include "berth/core/error.h"
#include "berth/model/bert_model.h"
#include "berth/model/input_checks.h"
#include "berth/model/sequence_classification_loss.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

#include <algorithm>

namespace berth {
namespace {

namespace F = torch::nn::functional;

std::string encoder_shape_of(const at::Tensor& t) { return format_shape(t.sizes()); }

bool is_integer(const at::Tensor& t) { return t.scalar_type() == at::kLong || t.scalar_type() == at::kInt; }

}  // namespace

at::Tensor token_loss(const at::Tensor& logits, const at::Tensor& labels) {
  check_tensor_on(labels, "labels", logits.device());
  BERTH_CHECK(is_integer(labels), "token labels must be integer ids (-100 for tokens left out), found ",
              dtype_name(labels.scalar_type()));
  BERTH_CHECK(labels.numel() * logits.size(-1) == logits.numel(), "labels have shape ",
              encoder_shape_of(labels), " but the logits ", encoder_shape_of(logits),
              ". Fix: give one label per token (-100 for padding)");
  // (B*T, classes) against (B*T,): -100 is cross_entropy's default ignore_index, as in HF.
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}).to(at::kLong));
}

at::Tensor question_answering_loss(const at::Tensor& logits, const at::Tensor& positions) {
  check_tensor_on(positions, "start/end positions", logits.device());
  const int64_t batch = logits.size(0);
  BERTH_CHECK(is_integer(positions) && positions.numel() == 2 * batch,
              "question answering needs one integer start and end position per example (", batch,
              " each), found shape ", encoder_shape_of(positions), " of ",
              dtype_name(positions.scalar_type()));
  // HF clamps positions outside the input to T and ignores T.
  const int64_t length = logits.size(1);
  const at::Tensor clamped = positions.reshape({batch, 2}).to(at::kLong).clamp(0, length);
  auto ce = F::CrossEntropyFuncOptions().ignore_index(length);
  const at::Tensor start = F::cross_entropy(logits.select(-1, 0).contiguous(), clamped.select(1, 0), ce);
  const at::Tensor end = F::cross_entropy(logits.select(-1, 1).contiguous(), clamped.select(1, 1), ce);
  return (start + end) / 2;
}

void init_encoder_weights(torch::nn::Module& module, double initializer_range, std::optional<uint64_t> seed) {
  init_bert_weights(module, initializer_range, seed);
  torch::NoGradGuard no_grad;
  // Without the root itself: a model initialising itself in its constructor is not yet held by a shared_ptr.
  std::vector<torch::nn::Module*> modules{&module};
  for (const auto& item : module.named_modules("", /*include_self=*/false))
    modules.push_back(item.value().get());
  for (torch::nn::Module* m : modules) {
    if (dynamic_cast<const torch::nn::LinearImpl*>(m) || dynamic_cast<const torch::nn::EmbeddingImpl*>(m) ||
        dynamic_cast<const torch::nn::LayerNormImpl*>(m))
      continue;
    // A tied decoder's bias: HF's Linear init (or the head's own _init_weights) zeroes it.
    for (auto& parameter : m->named_parameters(/*recurse=*/false)) parameter.value().zero_();
  }
}

EncoderTaskModel::EncoderTaskModel(PretrainedConfig config, ModelTask task, CheckpointLayout layout)
    : config_(std::move(config)), task_(task), layout_(std::move(layout)) {
  if (task_ == ModelTask::QuestionAnswering && config_.num_labels() != 2)
    config_.unsupported("num_labels", std::to_string(config_.num_labels()) + " for question answering",
                        "2 (start and end logits)", "set two labels (or none) in config.json");
}

at::Tensor EncoderTaskModel::logits(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                    const at::Tensor& token_type_ids) {
  check_token_inputs({layout_.architecture, shape_.vocab_size, shape_.max_positions}, input_ids,
                     {{"attention_mask", attention_mask}, {"token_type_ids", token_type_ids}});
  const at::Tensor any_parameter = parameters().front();
  check_batch(
      {{"input_ids", input_ids}, {"attention_mask", attention_mask}, {"token_type_ids", token_type_ids}},
      any_parameter.device());
  const at::Tensor mask = attention_mask.defined() ? attention_mask : torch::ones_like(input_ids);
  const at::Tensor types = token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids);
  return compute_logits(input_ids, mask, types);
}

TaskOutput EncoderTaskModel::forward_batch(const Batch& batch) {
  const at::Tensor& ids = batch_input_ids(batch, layout_.architecture);
  if (task_ == ModelTask::MaskedLM && loss_only() && batch_input(batch, "labels").defined())
    return forward_labeled_tokens(ids, batch);
  TaskOutput out;
  out.logits = logits(ids, batch_input(batch, "attention_mask"), batch_input(batch, "token_type_ids"));
  if (task_ == ModelTask::QuestionAnswering) {
    const at::Tensor start = batch_input(batch, "start_positions");
    const at::Tensor end = batch_input(batch, "end_positions");
    BERTH_CHECK(
        start.defined() == end.defined(), layout_.architecture, ": the batch has ",
        start.defined() ? "start_positions but no end_positions" : "end_positions but no start_positions",
        ". Fix: give both (or neither, for prediction)");
    if (start.defined()) out.loss = loss(out.logits, at::stack({start.reshape({-1}), end.reshape({-1})}, 1));
    return out;
  }
  const at::Tensor labels = batch_input(batch, "labels");
  if (labels.defined()) out.loss = loss(out.logits, labels);
  return out;
}

// The decoder over the vocabulary is most of a small masked LM's FLOPs and memory (bert-tiny's 16k vocab:
// 80% of the forward), while the loss reads the 15% of tokens that are masked: a loss-only forward decodes
// those rows alone, as ModernBERT's sparse_prediction does, with the same loss and gradients.
TaskOutput EncoderTaskModel::forward_labeled_tokens(const at::Tensor& input_ids, const Batch& batch) {
  const at::Tensor labels = batch_input(batch, "labels");
  BERTH_CHECK(labels.numel() == input_ids.numel(), layout_.architecture, ": labels have shape ",
              encoder_shape_of(labels), " but input_ids ", encoder_shape_of(input_ids),
              ". Fix: give one label per token (-100 for tokens left out)");
  check_tensor_on(labels, "labels", input_ids.device());
  const at::Tensor flat = labels.reshape({-1}).to(at::kLong);
  decoded_rows_ = (flat != -100).nonzero().reshape({-1});
  TaskOutput out;
  try {
    out.logits = logits(input_ids, batch_input(batch, "attention_mask"),
                        batch_input(batch, "token_type_ids"));  // (N, vocab)
  } catch (...) {
    decoded_rows_ = at::Tensor();
    throw;
  }
  out.loss = loss(out.logits, flat.index_select(0, decoded_rows_));
  decoded_rows_ = at::Tensor();
  return out;
}

at::Tensor EncoderTaskModel::loss(const at::Tensor& logits, const at::Tensor& labels) {
  switch (task_) {
    case ModelTask::SequenceClassification:
      return sequence_classification_loss(logits, labels, config_.problem_type);
    case ModelTask::TokenClassification:
      return token_loss(logits, labels);
    case ModelTask::MaskedLM:
      // As HF's ForMaskedLMLoss: the vocabulary's logits in float32 (a no-op unless training in bf16).
      return token_loss(logits.to(at::kFloat), labels);
    case ModelTask::QuestionAnswering:
      return question_answering_loss(logits, labels);
    case ModelTask::CausalLM:
      break;
  }
  BERTH_BUG(false, "an encoder built for task ", task_name(task_));
}

TaskModelInfo EncoderTaskModel::info() const {
  TaskModelInfo info;
  info.architecture = layout_.architecture;
  info.problem_type = problem_type_or_default(config_.problem_type, config_.num_labels());
  for (const auto& [id, label] : config_.id2label) info.labels.push_back(label);
  info.max_positions = shape_.max_positions;
  info.summary = model_summary(shape_.num_layers, shape_.hidden_size, shape_.vocab_size);
  info.task = task_;
  return info;
}

void EncoderTaskModel::save_pretrained(const std::string& dir) const {
  save_weights(*this, config_, layout_, dir);
}

at::Tensor EncoderTaskModel::run_block(const std::string& block, const at::Tensor& input,
                                       const std::function<at::Tensor(const at::Tensor&)>& fn) {
  if (!hooks_ || std::find(blocks_.begin(), blocks_.end(), block) == blocks_.end()) return fn(input);
  return hooks_->after_forward(block, fn(hooks_->before_forward(block, input)));
}

at::Tensor EncoderTaskModel::run_layer(size_t index, const std::string& block, torch::nn::Module& layer,
                                       const at::Tensor& input, const BlockForward& fn) {
  const bool hooked = hooks_ && std::find(blocks_.begin(), blocks_.end(), block) != blocks_.end();
  return run_layer_block(hooked ? hooks_.get() : nullptr, block, layer, input, fn,
                         gradient_checkpointing().layer(index) && is_training());
}

at::Tensor EncoderTaskModel::run_tied_decoder(const at::Tensor& input,
                                              const std::function<at::Tensor(const at::Tensor&)>& fn) {
  if (!decoded_rows_.defined()) return run_block(word_embeddings_block_, input, fn);
  // (B, T, C) -> (N, C): the labeled tokens.
  const at::Tensor rows = input.reshape({-1, input.size(-1)}).index_select(0, decoded_rows_);
  return run_block(word_embeddings_block_, rows, fn);
}

void EncoderTaskModel::set_blocks(const std::vector<std::string>& embeddings,
                                  const std::vector<std::string>& layers,
                                  const std::vector<std::string>& head) {
  BERTH_BUG(!embeddings.empty(), "an encoder without an embeddings block");
  word_embeddings_block_ = embeddings.front();
  blocks_ = embeddings;
  blocks_.insert(blocks_.end(), layers.begin(), layers.end());
  blocks_.insert(blocks_.end(), head.begin(), head.end());
  if (task_ == ModelTask::MaskedLM) blocks_.push_back(word_embeddings_block_);
}

}  // namespace berth
