// Decoder building blocks: activations written as transformers writes them, Conv1D's addmm, RMSNorm in
// float32, and the additive causal mask.
#include "berth/model/decoder_layers.h"

#include "berth/core/error.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace berth {
namespace {

constexpr double kDecoderPi = 3.14159265358979323846;

}  // namespace

DecoderActivation parse_decoder_activation(const std::string& name, const std::string& where) {
  if (name == "gelu") return DecoderActivation::Gelu;
  if (name == "gelu_new") return DecoderActivation::GeluNew;
  if (name == "gelu_pytorch_tanh") return DecoderActivation::GeluPytorchTanh;
  if (name == "relu") return DecoderActivation::Relu;
  if (name == "silu" || name == "swish") return DecoderActivation::Silu;
  BERTH_FAIL(where, " is \"", name,
             "\", an activation berth does not implement; it implements gelu, gelu_new, gelu_pytorch_tanh, "
             "relu, silu (swish). Fix: use a checkpoint whose config names one of those");
}

at::Tensor apply_decoder_activation(DecoderActivation activation, const at::Tensor& x) {
  switch (activation) {
    case DecoderActivation::Gelu:
      return torch::gelu(x);
    case DecoderActivation::GeluNew:
      // transformers' NewGELUActivation term by term (not torch's fused tanh GELU), to round the same way.
      return 0.5 * x * (1.0 + torch::tanh(std::sqrt(2.0 / kDecoderPi) * (x + 0.044715 * torch::pow(x, 3.0))));
    case DecoderActivation::GeluPytorchTanh:
      return torch::gelu(x, "tanh");
    case DecoderActivation::Relu:
      return torch::relu(x);
    case DecoderActivation::Silu:
      return torch::silu(x);
  }
  BERTH_BUG(false, "unknown DecoderActivation ", static_cast<int>(activation));
}

Conv1DImpl::Conv1DImpl(int64_t in_features, int64_t out_features) {
  weight = register_parameter("weight", torch::empty({in_features, out_features}));
  bias = register_parameter("bias", torch::zeros({out_features}));
}

at::Tensor Conv1DImpl::forward(const at::Tensor& x) {
  // As HF: one addmm over the flattened rows, bias inside the GEMM.
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(1);
  return at::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(sizes);
}

RMSNormImpl::RMSNormImpl(int64_t hidden_size, double epsilon) : eps(epsilon) {
  weight = register_parameter("weight", torch::ones({hidden_size}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  const c10::ScalarType input_dtype = x.scalar_type();
  at::Tensor h = x.to(at::kFloat);
  at::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps);
  return weight * h.to(input_dtype);
}

at::Tensor causal_attention_mask(const at::Tensor& attention_mask, int64_t batch, int64_t length,
                                 c10::ScalarType dtype, c10::Device device,
                                 std::optional<int64_t> sliding_window) {
  const auto index_options = torch::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor q = torch::arange(length, index_options).view({length, 1});
  at::Tensor k = torch::arange(length, index_options).view({1, length});
  at::Tensor allowed = k <= q;  // (T, T)
  if (sliding_window) allowed = allowed & (k > q - *sliding_window);
  // (T, T) -> (B, 1, T, T), with padded keys removed per row
  allowed = allowed.view({1, 1, length, length}).expand({batch, 1, length, length});
  if (attention_mask.defined())
    allowed = allowed & attention_mask.to(device).to(at::kBool).view({batch, 1, 1, length});
  double lowest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "causal_attention_mask", [&] {
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  return torch::where(allowed, torch::zeros({}, options), torch::full({}, lowest, options));
}

}  // namespace berth

namespace berth {
namespace {

template <typename Fn>
void for_each_decoder_module(torch::nn::Module& module, const Fn& fn) {
  fn(module);
  for (const auto& child : module.named_children()) for_each_decoder_module(*child.value(), fn);
}

void decoder_fill_normal(at::Tensor& tensor, double std, at::Generator& generator) {
  at::Tensor values = at::normal(0.0, std, tensor.sizes(), generator, at::TensorOptions().dtype(at::kFloat));
  tensor.copy_(values);
}

}  // namespace

void init_decoder_weights(torch::nn::Module& module, double std, std::optional<uint64_t> seed) {
  at::Generator generator =
      seed ? at::make_generator<at::CPUGeneratorImpl>(*seed) : at::detail::getDefaultCPUGenerator();
  torch::NoGradGuard no_grad;
  for_each_decoder_module(module, [&](torch::nn::Module& m) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
      decoder_fill_normal(linear->weight, std, generator);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* conv = dynamic_cast<Conv1DImpl*>(&m)) {
      decoder_fill_normal(conv->weight, std, generator);
      conv->bias.zero_();
    } else if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
      decoder_fill_normal(embedding->weight, std, generator);
      if (auto pad = embedding->options.padding_idx()) embedding->weight[*pad].zero_();
    } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
      norm->weight.fill_(1.0);
      norm->bias.zero_();
    } else if (auto* rms = dynamic_cast<RMSNormImpl*>(&m)) {
      rms->weight.fill_(1.0);
    }
  });
}

}  // namespace berth
