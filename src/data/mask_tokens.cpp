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

struct WordStarts {
  at::Tensor word_ids;  // (B, T): the word's number in its row, -1 for special tokens
  at::Tensor is_start;  // (B, T) bool: the word's first token
};

// HF's _calc_word_ids_and_prob_mask. offsets: (B, T, 2), special: (B, T) bool -> WordStarts
WordStarts word_starts(const at::Tensor& offsets, const at::Tensor& special) {
  const at::Tensor starts = offsets.select(2, 0);
  at::Tensor previous_ends = at::roll(offsets.select(2, 1), 1, 1);
  previous_ends.select(1, 0).fill_(-1);  // the first token has no previous one
  at::Tensor previous_special = at::roll(special, 1, 1);
  previous_special.select(1, 0).fill_(false);
  const at::Tensor is_start = special.logical_not() & (starts.ne(previous_ends) | previous_special);
  at::Tensor word_ids = at::cumsum(is_start.to(at::kLong), 1);
  word_ids.masked_fill_(special, -1);
  return {word_ids, is_start};
}

// HF's _whole_word_mask: a token is masked when any token of its word is. word_ids, masked: (B, T) -> (B, T)
at::Tensor whole_words(const at::Tensor& word_ids, const at::Tensor& masked) {
  const at::Tensor valid = word_ids.ne(-1);
  const at::Tensor same_word =
      word_ids.unsqueeze(2).eq(word_ids.unsqueeze(1)) & valid.unsqueeze(2) & valid.unsqueeze(1);
  return (same_word & masked.unsqueeze(1)).any(2);
}

// The tokens whose labels are kept: HF's first Bernoulli draw (and, for whole words, their expansion).
at::Tensor draw_masked(const at::Tensor& special_tokens_mask, const at::Tensor& offsets,
                       const MaskTokensOptions& options, at::Generator& generator) {
  const at::Tensor special = special_tokens_mask.to(at::kBool);
  at::Tensor probability = at::full(special.sizes(), options.mlm_probability, at::kFloat);
  if (!options.whole_word_mask) {
    probability.masked_fill_(special, 0.0);
    return at::bernoulli(probability, generator).to(at::kBool);
  }
  BERTH_BUG(offsets.defined() && offsets.dim() == 3 && offsets.size(0) == special.size(0) &&
                offsets.size(1) == special.size(1),
            "mask_tokens: whole-word masking needs (B, T, 2) offsets beside the (B, T) ids");
  const WordStarts words = word_starts(offsets, special);
  probability.masked_fill_(words.is_start.logical_not(), 0.0);
  return whole_words(words.word_ids, at::bernoulli(probability, generator).to(at::kBool));
}

}  // namespace

// input_ids, special_tokens_mask: (B, T), offsets: (B, T, 2) or undefined -> (B, T), (B, T)
MaskedTokens mask_tokens(const at::Tensor& input_ids, const at::Tensor& special_tokens_mask,
                         const MaskTokensOptions& requested, at::Generator generator,
                         const at::Tensor& offsets) {
  check_options(requested);
  BERTH_BUG(input_ids.sizes() == special_tokens_mask.sizes(), "mask_tokens: input_ids ", input_ids.sizes(),
            " but special_tokens_mask ", special_tokens_mask.sizes());
  MaskTokensOptions options = requested;
  if (options.whole_word_mask) {  // HF's __post_init__ forces these for whole words
    options.mask_replace_prob = 1.0;
    options.random_replace_prob = 0.0;
  }
  at::Tensor inputs = input_ids.clone();
  at::Tensor labels = input_ids.clone();
  const auto shape = labels.sizes();
  const at::Tensor masked = draw_masked(special_tokens_mask, offsets, options, generator);
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
