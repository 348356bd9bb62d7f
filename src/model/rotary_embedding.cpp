// Rotary position embeddings: HF's rope-type table (default, linear, llama3, dynamic), its frequency formulas
// in float32 as transformers evaluates them, and rotate_half.
#include "berth/model/rotary_embedding.h"

#include "berth/core/error.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace berth {
namespace {

constexpr double kRopePi = 3.14159265358979323846;

// The rope settings object: rope_parameters (transformers 5) or rope_scaling (earlier); empty when neither.
nlohmann::json rope_object(const PretrainedConfig& config, std::string& field) {
  for (const char* name : {"rope_parameters", "rope_scaling"}) {
    if (!config.has(name)) continue;
    field = name;
    nlohmann::json json = nlohmann::json::parse(config.get_json(name));
    BERTH_CHECK(json.is_object(), config.where(name),
                " must be an object such as {\"rope_type\": \"default\"}, "
                "found ",
                json.dump(), ". Fix: write it as transformers saves it");
    return json;
  }
  field = "rope_parameters";
  return nlohmann::json::object();
}

double rope_number(const PretrainedConfig& config, const nlohmann::json& rope, const std::string& field,
                   const std::string& key, std::optional<double> fallback) {
  if (!rope.contains(key) || rope[key].is_null()) {
    BERTH_CHECK(fallback.has_value(), config.where(field), ".", key, " is missing; rope type \"",
                rope.value("rope_type", rope.value("type", std::string("default"))),
                "\" needs it. Fix: add it");
    return *fallback;
  }
  BERTH_CHECK(rope[key].is_number(), config.where(field), ".", key, " must be a number, found ",
              rope[key].dump());
  return rope[key].get<double>();
}

}  // namespace

RopeParameters read_rope_parameters(const PretrainedConfig& config, int64_t head_dim) {
  std::string field;
  const nlohmann::json rope = rope_object(config, field);
  RopeParameters out;
  out.head_dim = head_dim;
  out.max_position_embeddings = config.get_int("max_position_embeddings");
  // HF's standardize_rope_params: rope_type, else the legacy "type", else default.
  const nlohmann::json type =
      rope.contains("rope_type") ? rope["rope_type"] : rope.value("type", nlohmann::json());
  if (!type.is_null()) {
    BERTH_CHECK(type.is_string(), config.where(field), ".rope_type must be a string, found ", type.dump());
    out.rope_type = type.get<std::string>();
  }
  if (out.rope_type != "default" && out.rope_type != "linear" && out.rope_type != "llama3" &&
      out.rope_type != "dynamic") {
    config.unsupported(field + ".rope_type", "\"" + out.rope_type + "\"",
                       "the rope types default, linear, llama3 and dynamic",
                       "use a checkpoint with one of those rope types");
  }
  out.rope_theta = rope_number(config, rope, field, "rope_theta", config.get_number("rope_theta", 10000.0));
  const double partial = rope_number(config, rope, field, "partial_rotary_factor",
                                     config.get_number("partial_rotary_factor", 1.0));
  if (partial != 1.0)
    config.unsupported(field + ".partial_rotary_factor", std::to_string(partial),
                       "rotary embeddings over the "
                       "whole head (1.0)",
                       "use a checkpoint without partial rotary embeddings");
  if (out.rope_type == "default") return out;
  out.factor = rope_number(config, rope, field, "factor", std::nullopt);
  if (out.rope_type == "llama3") {
    out.low_freq_factor = rope_number(config, rope, field, "low_freq_factor", std::nullopt);
    out.high_freq_factor = rope_number(config, rope, field, "high_freq_factor", std::nullopt);
    out.original_max_position_embeddings =
        static_cast<int64_t>(rope_number(config, rope, field, "original_max_position_embeddings",
                                         static_cast<double>(out.max_position_embeddings)));
  }
  return out;
}

at::Tensor rope_inverse_frequencies(const RopeParameters& rope, int64_t seq_len) {
  const int64_t dim = rope.head_dim;
  // HF: arange(0, dim, 2) in int64, as float32, over dim; base ** that in float32.
  at::Tensor exponent = torch::arange(0, dim, 2, torch::kLong).to(at::kFloat) / static_cast<double>(dim);
  if (rope.rope_type == "dynamic") {
    // HF's dynamic NTK: the base grows with the sequence beyond max_position_embeddings, in float32 tensors.
    at::Tensor length = torch::tensor(std::max(seq_len, rope.max_position_embeddings), torch::kLong);
    at::Tensor scale =
        (rope.factor * length / static_cast<double>(rope.max_position_embeddings)) - (rope.factor - 1);
    at::Tensor base =
        rope.rope_theta * torch::pow(scale, static_cast<double>(dim) / static_cast<double>(dim - 2));
    return 1.0 / torch::pow(base, exponent);
  }
  at::Tensor inv_freq = 1.0 / torch::pow(rope.rope_theta, exponent);
  if (rope.rope_type == "linear") return inv_freq / rope.factor;
  if (rope.rope_type != "llama3") return inv_freq;
  // Llama 3: long wavelengths divided by factor, short ones kept, the band between interpolated smoothly.
  const double old_context = static_cast<double>(rope.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / rope.low_freq_factor;
  const double high_freq_wavelen = old_context / rope.high_freq_factor;
  at::Tensor wavelen = 2 * kRopePi / inv_freq;
  at::Tensor scaled = torch::where(wavelen > low_freq_wavelen, inv_freq / rope.factor, inv_freq);
  at::Tensor smooth =
      (old_context / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
  at::Tensor smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
  at::Tensor medium =
      (wavelen < high_freq_wavelen).logical_not() & (wavelen > low_freq_wavelen).logical_not();
  return torch::where(medium, smoothed, scaled);
}

RotaryEmbedding::RotaryEmbedding(RopeParameters rope)
    : rope_(std::move(rope)),
      inv_freq_(rope_inverse_frequencies(rope_)),
      original_inv_freq_(inv_freq_.clone()),
      cached_length_(rope_.max_position_embeddings) {}

RotaryCosSin RotaryEmbedding::forward(int64_t length, c10::ScalarType dtype, c10::Device device) {
  if (rope_.rope_type == "dynamic") {
    // HF's dynamic_frequency_update: grow past the cached length, reset once a short sequence follows.
    if (length > cached_length_) {
      inv_freq_ = rope_inverse_frequencies(rope_, length);
      cached_length_ = length;
    }
    if (length < rope_.max_position_embeddings && cached_length_ > rope_.max_position_embeddings) {
      inv_freq_ = original_inv_freq_;
      cached_length_ = rope_.max_position_embeddings;
    }
  }
  // (1, T, 1) * (D/2,) -> (1, T, D/2) -> (1, T, D)
  at::Tensor positions = torch::arange(length, torch::TensorOptions().dtype(at::kLong).device(device));
  at::Tensor freqs = positions.view({1, length, 1}).to(at::kFloat) * inv_freq_.to(device);
  at::Tensor emb = torch::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

at::Tensor apply_rotary(const at::Tensor& x, const RotaryCosSin& rotary) {
  const int64_t half = x.size(-1) / 2;
  // rotate_half: (x1, x2) -> (-x2, x1)
  at::Tensor rotated = torch::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
  at::Tensor cos = rotary.cos.unsqueeze(1);
  at::Tensor sin = rotary.sin.unsqueeze(1);
  return (x * cos) + (rotated * sin);
}

}  // namespace berth
