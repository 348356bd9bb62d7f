// Decoder building blocks shared by the GPT-2 and Llama families: HF's activations by name, GPT-2's Conv1D,
// Llama's RMSNorm and the causal (optionally banded) attention mask combined with padding.
#pragma once

#include "berth/model/layer_hooks.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <string>

namespace berth {

enum class DecoderActivation { Gelu, GeluNew, GeluPytorchTanh, Relu, Silu };
// HF's ACT2FN names "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu" and "swish"; another throws
// berth::Error naming `where` (the config field) and the supported names.
DecoderActivation parse_decoder_activation(const std::string& name, const std::string& where);
// x: any shape -> same shape
at::Tensor apply_decoder_activation(DecoderActivation activation, const at::Tensor& x);

// HF's Conv1D (pytorch_utils): a linear layer whose weight is stored (in, out), as GPT-2's checkpoints hold
// it.
struct Conv1DImpl : torch::nn::Module {
  Conv1DImpl(int64_t in_features, int64_t out_features);
  // x: (..., in) -> (..., out) = x @ weight + bias
  at::Tensor forward(const at::Tensor& x);

  at::Tensor weight;  // (in, out)
  at::Tensor bias;    // (out,)
};
TORCH_MODULE(Conv1D);

// HF's LlamaRMSNorm: computed in float32 whatever the input dtype, then scaled by weight in the input dtype.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t hidden_size, double eps);
  // x: (..., C) -> (..., C)
  at::Tensor forward(const at::Tensor& x);

  double eps = 1e-6;
  at::Tensor weight;  // (C,), ones at init
};
TORCH_MODULE(RMSNorm);

// HF's eager causal mask (masking_utils): attention_mask (B, T) 1/0 (undefined: all ones) -> (B, 1, T, T) of
// `dtype`, 0 where query q may attend key k (k <= q, k > q - sliding_window when a window is given, and
// attention_mask[b, k] == 1), the dtype's lowest value elsewhere.
at::Tensor causal_attention_mask(const at::Tensor& attention_mask, int64_t batch, int64_t length,
                                 c10::ScalarType dtype, c10::Device device,
                                 std::optional<int64_t> sliding_window = std::nullopt);

// HF's PreTrainedModel._init_weights over every submodule of `module`: Linear and Conv1D weights and
// Embedding rows ~ normal(0, std), biases 0, an Embedding's padding row 0, LayerNorm and RMSNorm weights 1
// (biases 0). Values are drawn on the CPU in module order from a generator seeded with `seed` (nullopt:
// torch's global one).
void init_decoder_weights(torch::nn::Module& module, double std, std::optional<uint64_t> seed);

}  // namespace berth
