// mask_tokens: HF's torch_mask_tokens, draw for draw.
#include "berth/data/mask_tokens.h"

#include "berth/core/error.h"

#include <ATen/ATen.h>

namespace berth::data {

namespace {

void check_options(const MaskTokensOptions& options) {
  auto probability = [](double p, const char* name) {
    BERTH_CHECK(p >= 0.0 && p <= 1.0, "masked LM: ", name, " is ", p,
                ", expected a probability in [0, 1]. Fix: pass a value between 0 and 1");
  };
  probability(options.mlm_probability, "mlm_probability");
  probability(options.mask_replace_prob, "mask_replace_prob");
  probability(options.random_replace_prob, "random_replace_prob");
  BERTH_CHECK(options.mask_replace_prob + options.random_replace_prob <= 1.0 + 1e-12,
              "masked LM: mask_replace_prob (", options.mask_replace_prob, ") + random_replace_prob (",
              options.random_replace_prob, ") exceed 1. Fix: make their sum at most 1");
  BERTH_CHECK(
      options.mask_token_id >= 0,
      "masked LM: the tokenizer has no mask token. Fix: use a tokenizer with one ([MASK] or <mask> in "
      "its special tokens), or train with --task causal-lm");
  BERTH_CHECK(options.vocab_size > options.mask_token_id, "masked LM: the mask token's id ",
              options.mask_token_id, " is outside the vocabulary of ", options.vocab_size,
              ". Fix: use the tokenizer the model was made for");
}

}  // namespace

// input_ids, special_tokens_mask: (B, T) -> (B, T), (B, T)
MaskedTokens mask_tokens(const at::Tensor& input_ids, const at::Tensor& special_tokens_mask,
                         const MaskTokensOptions& options, at::Generator generator) {
  check_options(options);
  BERTH_BUG(input_ids.sizes() == special_tokens_mask.sizes(), "mask_tokens: input_ids ", input_ids.sizes(),
            " but special_tokens_mask ", special_tokens_mask.sizes());
  at::Tensor inputs = input_ids.clone();
  at::Tensor labels = input_ids.clone();
  const auto shape = labels.sizes();
  at::Tensor probability = at::full(shape, options.mlm_probability, at::kFloat);
  probability.masked_fill_(special_tokens_mask.to(at::kBool), 0.0);
  const at::Tensor masked = at::bernoulli(probability, generator).to(at::kBool);
  labels.masked_fill_(masked.logical_not(), -100);

  const at::Tensor replaced =
      at::bernoulli(at::full(shape, options.mask_replace_prob, at::kFloat), generator).to(at::kBool) & masked;
  inputs.masked_fill_(replaced, options.mask_token_id);
  if (options.mask_replace_prob == 1.0 || options.random_replace_prob == 0.0) return {inputs, labels};

  // HF scales the random share to what the mask token left: 0.1 / (1 - 0.8) = 0.5.
  const double scaled = options.random_replace_prob / (1.0 - options.mask_replace_prob);
  const at::Tensor random = at::bernoulli(at::full(shape, scaled, at::kFloat), generator).to(at::kBool) &
                            masked & replaced.logical_not();
  const at::Tensor words = at::randint(options.vocab_size, shape, generator, at::kLong);
  inputs = at::where(random, words, inputs);
  return {inputs, labels};
}

uint64_t mask_seed(uint64_t seed, uint64_t epoch, uint64_t batch) {
  // splitmix64 over the three: neighbouring batches get unrelated streams.
  auto mix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  };
  return mix(mix(mix(seed) ^ epoch) ^ batch);
}

}  // namespace berth::data
