// mask_tokens: HF's DataCollatorForLanguageModeling(mlm=True) masking for masked-LM training: a random 15% of
// the non-special tokens become the labels; of those, 80% are replaced by the mask token, 10% by a random
// token and 10% kept. Whole-word masking (HF's whole_word_mask=True) masks every token of a chosen word.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace berth::data {

struct MaskTokensOptions {
  double mlm_probability = 0.15;     // the share of non-special tokens that become labels
  double mask_replace_prob = 0.8;    // of those, replaced by mask_token_id
  double random_replace_prob = 0.1;  // of those, replaced by a random id in [0, vocab_size)
  int64_t mask_token_id = -1;        // the tokenizer's [MASK] / <mask>
  int64_t vocab_size = 0;            // len(tokenizer): the model's vocabulary and the added tokens
  // HF's whole_word_mask: words are runs of tokens whose offsets touch (a token starting where the previous
  // one ended continues its word: "un ##believ ##ably", "isn ' t"); only a word's first token is drawn, and
  // a drawn word is masked whole. As HF, every chosen token then becomes the mask token (mask_replace_prob
  // 1, random_replace_prob 0, whatever they are set to).
  bool whole_word_mask = false;
};

struct MaskedTokens {
  at::Tensor input_ids;  // (B, T): the inputs with the masked tokens replaced
  at::Tensor labels;     // (B, T): the original ids where masked, -100 elsewhere
};

// input_ids, special_tokens_mask: (B, T) int64 (special: 1 for special tokens and padding, never masked) ->
// MaskedTokens. Draws from `generator` exactly as HF's torch_mask_tokens does (three Bernoulli draws over the
// whole batch, then one randint), so the same seeded generator gives HF's masks. Bad options throw
// berth::Error naming the field. offsets: (B, T, 2) int64 [start, end) of each token in its text ((0, 0) for
// padding), needed with whole_word_mask only.
MaskedTokens mask_tokens(const at::Tensor& input_ids, const at::Tensor& special_tokens_mask,
                         const MaskTokensOptions& options, at::Generator generator,
                         const at::Tensor& offsets = at::Tensor());

// The seed of batch `batch` of epoch `epoch`'s masks: a function of the three alone, so that a resumed run
// and every prefetch order mask each batch as an uninterrupted run does (HF draws from one generator in
// batch order instead: the same masks only for a run's first batch).
uint64_t mask_seed(uint64_t seed, uint64_t epoch, uint64_t batch);

}  // namespace berth::data
