// generate: a causal language model's continuation of a prompt, greedy or sampled, as HF's generate() with
// its default logits processors (temperature, top-k, top-p) and no cache.
#pragma once

#include "berth/model/task_model.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace berth {

struct GenerateOptions {
  int64_t max_new_tokens = 20;
  bool do_sample = false;  // false: greedy (HF's default), the most probable token each step
  // Sampling only, HF's defaults: logits / temperature, then the top_k most probable (0: all), then the
  // smallest set whose probability reaches top_p (1: all).
  double temperature = 1.0;
  int64_t top_k = 50;
  double top_p = 1.0;
  uint64_t seed = 0;  // the sampling generator's seed: the same seed gives the same text
  // Generation stops after this token (the tokenizer's EOS); nullopt: after max_new_tokens.
  std::optional<int64_t> eos_token_id;
};

// prompt: token ids (T,) -> the generated ids (without the prompt), at most max_new_tokens, ending with the
// EOS token when one was generated. The model must be a causal LM (info().task) in eval mode on `device`;
// each step runs the whole sequence (no key/value cache), so the prompt plus the new tokens must fit in
// info().max_positions. Throws berth::Error otherwise, or for options out of range.
std::vector<int64_t> generate(TaskModel& model, const std::vector<int64_t>& prompt,
                              const GenerateOptions& options, c10::Device device);

}  // namespace berth
