// mask_tokens: HF's DataCollatorForLanguageModeling(mlm=True) masking for masked-LM training: a random 15% of
// the non-special tokens become the labels; of those, 80% are replaced by the mask token, 10% by a random
// token and 10% kept.
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
};

struct MaskedTokens {
  at::Tensor input_ids;  // (B, T): the inputs with the masked tokens replaced
  at::Tensor labels;     // (B, T): the original ids where masked, -100 elsewhere
};

// input_ids, special_tokens_mask: (B, T) int64 (special: 1 for special tokens and padding, never masked) ->
// MaskedTokens. Draws from `generator` exactly as HF's torch_mask_tokens does (three Bernoulli draws over the
// whole batch, then one randint), so the same seeded generator gives HF's masks. Bad options throw
// berth::Error naming the field.
MaskedTokens mask_tokens(const at::Tensor& input_ids, const at::Tensor& special_tokens_mask,
                         const MaskTokensOptions& options, at::Generator generator);

// The seed of batch `batch` of epoch `epoch`'s masks: a function of the three alone, so that a resumed run
// and every prefetch order mask each batch as an uninterrupted run does (HF draws from one generator in
// batch order instead: the same masks only for a run's first batch).
uint64_t mask_seed(uint64_t seed, uint64_t epoch, uint64_t batch);

}  // namespace berth::data
