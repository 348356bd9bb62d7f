// Rotary position embeddings (RoPE) as HF's modeling_rope_utils computes them, for the Llama-style families:
// the rope types default, linear, llama3 and dynamic, read from config.json's rope_parameters (transformers
// 5) or the older rope_scaling + rope_theta.
#pragma once

#include "berth/model/pretrained_config.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

namespace berth {

struct RopeParameters {
  std::string rope_type = "default";  // "default", "linear", "llama3" or "dynamic"
  double rope_theta = 10000.0;
  double factor = 1.0;                           // linear, llama3, dynamic
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3 (HF's default: max_position_embeddings)
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
};

// The RoPE settings `config` describes for heads of `head_dim`. Another rope type, a partial_rotary_factor
// other than 1 or a malformed field throws berth::Error naming the field and its value.
RopeParameters read_rope_parameters(const PretrainedConfig& config, int64_t head_dim);

// HF's inverse frequencies (head_dim / 2,) float32 on the CPU for `rope`; dynamic uses `seq_len` as HF's
// dynamic NTK update does (at least max_position_embeddings).
at::Tensor rope_inverse_frequencies(const RopeParameters& rope, int64_t seq_len = 0);

// cos and sin of every position times every frequency, as HF's *RotaryEmbedding.forward returns them.
struct RotaryCosSin {
  at::Tensor cos;  // (1, T, head_dim)
  at::Tensor sin;  // (1, T, head_dim)
};

// HF's rotary embedding module: its frequencies, which the dynamic type recomputes when a longer sequence
// than any before arrives and resets when a short one follows (HF's dynamic_rope_update).
class RotaryEmbedding {
 public:
  explicit RotaryEmbedding(RopeParameters rope);
  // positions 0..length-1 -> cos, sin (1, T, head_dim) of `dtype` on `device`
  RotaryCosSin forward(int64_t length, c10::ScalarType dtype, c10::Device device);
  const RopeParameters& parameters() const { return rope_; }

 private:
  RopeParameters rope_;
  at::Tensor inv_freq_;           // (head_dim / 2,) float32, CPU
  at::Tensor original_inv_freq_;  // as built
  int64_t cached_length_ = 0;     // HF's max_seq_len_cached
};

// HF's apply_rotary_pos_emb for one of q or k: x (B, H, T, D), cos/sin (1, T, D) -> (B, H, T, D)
at::Tensor apply_rotary(const at::Tensor& x, const RotaryCosSin& rotary);

}  // namespace berth
