// DeBERTa-v2/v3 (config.json "deberta-v2"): HF's DebertaV2Model (embeddings with an optional projection,
// disentangled self-attention over log-bucketed relative positions, the optional convolution after the first
// layer) and its sequence/token classification, masked-LM (legacy `cls` and newer `lm_predictions` heads)
// and question-answering heads, under HF's parameter names.
#pragma once

#include "berth/model/auto_model.h"
#include "berth/model/bert_config.h"
#include "berth/model/bert_model.h"
#include "berth/model/encoder_task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

namespace berth {

// The DeBERTa-v2 fields of config.json, HF's defaults where absent (DebertaV2Config).
struct DebertaV2Config {
  BertConfig layers;  // the BERT-named fields: sizes, hidden_act, dropouts, layer_norm_eps, pad_token_id
  int64_t embedding_size = 0;         // the word embeddings' width (hidden_size when absent)
  bool position_biased_input = true;  // absolute position embeddings added to the input
  bool relative_attention = false;
  int64_t max_relative_positions = 0;  // config's value, or max_position_embeddings when < 1
  int64_t position_buckets = -1;       // > 0: log-bucketed relative positions (v3: 256)
  bool c2p = false, p2c = false;       // pos_att_type
  bool share_att_key = false;          // position projections reuse query_proj / key_proj
  bool norm_rel_ebd = false;           // "layer_norm" in norm_rel_ebd: the relative embeddings normalised
  int64_t conv_kernel_size = 0;        // > 0: ConvLayer after the first layer
  int64_t conv_groups = 1;
  std::string conv_act = "tanh";
  double pooler_dropout = 0;
  std::string pooler_hidden_act = "gelu";
  double cls_dropout = 0;  // cls_dropout, else hidden_dropout_prob
  bool legacy = true;      // masked LM: cls.predictions (true) or lm_predictions.lm_head
  // The attention's relative-position span: position_buckets when > 0, else max_relative_positions.
  int64_t attention_span() const { return position_buckets > 0 ? position_buckets : max_relative_positions; }
};

// Reads and checks config.json's DeBERTa-v2 fields (unsupported values name the field and the fix).
DebertaV2Config read_deberta_v2_config(const PretrainedConfig& config);

// HF's build_relative_position for a sequence of `length` tokens: (1, T, T) int64 query - key positions,
// log-bucketed (make_log_bucket_position) when bucket_size and max_position are positive.
at::Tensor deberta_relative_positions(int64_t length, int64_t bucket_size, int64_t max_position,
                                      const at::Device& device);

struct DebertaV2EmbeddingsImpl : torch::nn::Module {
  explicit DebertaV2EmbeddingsImpl(const DebertaV2Config& config);
  // ids, types, mask: (B, T) -> (B, T, C), padded positions zeroed as HF does
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& mask);

  torch::nn::Embedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};    // null unless position_biased_input
  torch::nn::Embedding token_type_embeddings{nullptr};  // null when type_vocab_size is 0
  torch::nn::Linear embed_proj{nullptr};                // null when embedding_size == hidden_size
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(DebertaV2Embeddings);

// HF's DisentangledSelfAttention: content-to-content plus content-to-position and position-to-content scores.
struct DisentangledSelfAttentionImpl : torch::nn::Module {
  explicit DisentangledSelfAttentionImpl(const DebertaV2Config& config);
  // hidden: (B, T, C), mask: (B, 1, T, T) bool, relative_pos: (1, T, T) int64, rel_embeddings: (2 span, C)
  // -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const at::Tensor& relative_pos,
                     const at::Tensor& rel_embeddings);

  DebertaV2Config config;
  int64_t num_heads = 0;
  torch::nn::Linear query_proj{nullptr}, key_proj{nullptr}, value_proj{nullptr};
  torch::nn::Linear pos_key_proj{nullptr}, pos_query_proj{nullptr};  // without share_att_key
  torch::nn::Dropout pos_dropout{nullptr}, dropout{nullptr};

 private:
  // q, k: (B, H, T, D), positions (1, T, T), rel (1, 2 span, C) -> the relative scores (B, H, T, T)
  at::Tensor relative_scores(const at::Tensor& q, const at::Tensor& k, const at::Tensor& relative_pos,
                             const at::Tensor& rel, double scale) const;
};
TORCH_MODULE(DisentangledSelfAttention);

struct DebertaV2AttentionImpl : torch::nn::Module {
  explicit DebertaV2AttentionImpl(const DebertaV2Config& config);
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const at::Tensor& relative_pos,
                     const at::Tensor& rel_embeddings);

  DisentangledSelfAttention self{nullptr};
  BertResidualOutput output{nullptr};
};
TORCH_MODULE(DebertaV2Attention);

struct DebertaV2LayerImpl : torch::nn::Module {
  explicit DebertaV2LayerImpl(const DebertaV2Config& config);
  // hidden: (B, T, C) -> (B, T, C); the other inputs as DisentangledSelfAttention's
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const at::Tensor& relative_pos,
                     const at::Tensor& rel_embeddings);

  DebertaV2Attention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertResidualOutput output{nullptr};
};
TORCH_MODULE(DebertaV2Layer);

// HF's ConvLayer (deberta-v2-xlarge and larger): a 1-D convolution over the embeddings added to the first
// layer's output.
struct DebertaV2ConvLayerImpl : torch::nn::Module {
  explicit DebertaV2ConvLayerImpl(const DebertaV2Config& config);
  // embeddings, layer_output: (B, T, C), mask: (B, T) -> (B, T, C)
  at::Tensor forward(const at::Tensor& embeddings, const at::Tensor& layer_output, const at::Tensor& mask);

  std::string act;
  torch::nn::Conv1d conv{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(DebertaV2ConvLayer);

struct DebertaV2EncoderImpl : torch::nn::Module {
  explicit DebertaV2EncoderImpl(const DebertaV2Config& config);
  // The relative-position embeddings the layers read: (2 span, C), normalised when norm_rel_ebd says so.
  at::Tensor rel_embedding_table();

  torch::nn::ModuleList layer{nullptr};          // of DebertaV2Layer
  torch::nn::Embedding rel_embeddings{nullptr};  // null without relative_attention
  torch::nn::LayerNorm LayerNorm{nullptr};       // null unless norm_rel_ebd
  DebertaV2ConvLayer conv{nullptr};              // null unless conv_kernel_size > 0
};
TORCH_MODULE(DebertaV2Encoder);

struct DebertaV2ModelImpl : torch::nn::Module {
  explicit DebertaV2ModelImpl(const DebertaV2Config& config);

  DebertaV2Embeddings embeddings{nullptr};
  DebertaV2Encoder encoder{nullptr};
};
TORCH_MODULE(DebertaV2Model);

// HF's ContextPooler: the first token through dropout, dense and pooler_hidden_act.
struct DebertaV2ContextPoolerImpl : torch::nn::Module {
  explicit DebertaV2ContextPoolerImpl(const DebertaV2Config& config);
  // hidden: (B, T, C) -> (B, C)
  at::Tensor forward(const at::Tensor& hidden);

  std::string act;  // pooler_hidden_act
  torch::nn::Linear dense{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(DebertaV2ContextPooler);

// The masked-LM transform: dense, activation, LayerNorm; then the tied word embeddings and `bias`.
// Legacy (cls.predictions): transform.dense and transform.LayerNorm at embedding_size; new
// (lm_predictions.lm_head): dense and LayerNorm at C.
struct DebertaV2LmHeadImpl : torch::nn::Module {
  DebertaV2LmHeadImpl(const DebertaV2Config& config, bool legacy);
  // hidden: (B, T, C), word_embeddings: (V, E) -> (B, T, V)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& word_embeddings);

  Activation activation = Activation::Gelu;
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  at::Tensor bias;
};
TORCH_MODULE(DebertaV2LmHead);

// DebertaV2<Head> for one task: deberta.* plus pooler + classifier; classifier; cls.predictions or
// lm_predictions.lm_head; qa_outputs.
class DebertaV2TaskModel : public EncoderTaskModel {
 public:
  DebertaV2TaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                     const TaskModelInit& init);

  DebertaV2Config deberta_config;
  DebertaV2Model deberta{nullptr};
  DebertaV2ContextPooler pooler{nullptr};  // sequence classification
  torch::nn::Dropout dropout{nullptr};     // before the classifier
  torch::nn::Linear linear_head{nullptr};  // "classifier" or "qa_outputs"
  DebertaV2LmHead lm_head{nullptr};        // masked LM: cls.predictions or lm_predictions.lm_head
  std::string lm_block;                    // the top-level module holding it: "cls" or "lm_predictions"

 protected:
  at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                            const at::Tensor& types) override;

 private:
  at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& mask, const at::Tensor& types);
  at::Tensor head_logits(const at::Tensor& hidden);
  void register_head(ModelTask task);
};

}  // namespace berth
