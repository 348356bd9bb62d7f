// generate: greedy or sampled decoding over a causal LM's last-position logits, HF's processors in HF's
// order.
#include "berth/model/generate.h"

#include "berth/core/error.h"

#include <torch/torch.h>

#include <limits>

namespace berth {
namespace {

// logits: (V,) float -> the same with everything outside top-k and top-p set to -inf, as HF's
// TopKLogitsWarper and TopPLogitsWarper do (the most probable token always stays).
at::Tensor filter_logits(at::Tensor logits, const GenerateOptions& options) {
  const double inf = std::numeric_limits<double>::infinity();
  if (options.top_k > 0 && options.top_k < logits.size(0)) {
    const at::Tensor kth = std::get<0>(logits.topk(options.top_k)).select(0, options.top_k - 1);
    logits = logits.masked_fill(logits < kth, -inf);
  }
  if (options.top_p < 1.0) {
    // HF sorts ascending and removes the tokens whose cumulative probability stays within 1 - top_p.
    auto [sorted, order] = logits.sort(/*dim=*/0, /*descending=*/false);
    at::Tensor cumulative = sorted.softmax(0).cumsum(0);
    at::Tensor remove = cumulative <= (1.0 - options.top_p);
    remove.index_put_({-1}, false);
    logits = logits.masked_fill(remove.scatter(0, order, remove), -inf);
  }
  return logits;
}

int64_t next_token(const at::Tensor& last_logits, const GenerateOptions& options, at::Generator& generator) {
  if (!options.do_sample) return last_logits.argmax().item<int64_t>();
  const at::Tensor probabilities = filter_logits(last_logits / options.temperature, options).softmax(0);
  return at::multinomial(probabilities, 1, false, generator).item<int64_t>();
}

void check_options(const TaskModel& model, size_t prompt, const GenerateOptions& options) {
  const TaskModelInfo info = model.info();
  BERTH_CHECK(
      info.task == ModelTask::CausalLM, "generate: ", info.architecture, " is a ", task_name(info.task),
      " model, not a causal language model. Fix: generate with a causal-lm checkpoint (e.g. one trained "
      "with --task causal-lm)");
  BERTH_CHECK(prompt > 0, "generate: the prompt is empty. Fix: give at least one token of text");
  BERTH_CHECK(options.max_new_tokens >= 1, "generate: max_new_tokens is ", options.max_new_tokens,
              ". Fix: ask for at least 1 new token");
  BERTH_CHECK(static_cast<int64_t>(prompt) + options.max_new_tokens <= info.max_positions,
              "generate: the prompt (", prompt, " tokens) plus max_new_tokens (", options.max_new_tokens,
              ") exceeds the model's ", info.max_positions,
              " positions. Fix: a shorter prompt or fewer new tokens");
  BERTH_CHECK(!options.do_sample || options.temperature > 0, "generate: temperature ", options.temperature,
              " must be positive. Fix: e.g. 0.7, or greedy decoding without --do-sample");
  BERTH_CHECK(options.top_p > 0 && options.top_p <= 1, "generate: top_p ", options.top_p,
              " must be in (0, 1]. Fix: e.g. 0.9, or 1 to keep every token");
}

}  // namespace

std::vector<int64_t> generate(TaskModel& model, const std::vector<int64_t>& prompt,
                              const GenerateOptions& options, c10::Device device) {
  check_options(model, prompt.size(), options);
  torch::NoGradGuard no_grad;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<int64_t> ids = prompt;
  std::vector<int64_t> generated;
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  while (static_cast<int64_t>(generated.size()) < options.max_new_tokens) {
    const auto length = static_cast<int64_t>(ids.size());
    const Batch batch{{"input_ids", at::tensor(ids, long_options).reshape({1, length}).to(device)},
                      {"attention_mask", at::ones({1, length}, long_options).to(device)}};
    // logits: (1, T, V) -> the last position's (V,), on the CPU in fp32 for the choice.
    const at::Tensor last =
        model.forward_batch(batch).logits.select(0, 0).select(0, -1).to(at::kCPU).to(at::kFloat);
    const int64_t token = next_token(last, options, generator);
    ids.push_back(token);
    generated.push_back(token);
    if (options.eos_token_id && token == *options.eos_token_id) break;
  }
  return generated;
}

}  // namespace berth
