// Predictor: tokenise in batches, run the classifier without autograd, turn logits into labels.
#include "berth/model/predictor.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/model/auto_model.h"
#include "berth/placement/place.h"
#include "berth/tokenizer/tokenizer_files.h"

namespace berth {
namespace {

// The batch's encodings as (B, T) int64 tensors on `device`.
at::Tensor stack_field(const std::vector<tokenizer::Encoding>& encodings,
                       std::vector<int64_t> tokenizer::Encoding::*field, c10::Device device) {
  const int64_t rows = static_cast<int64_t>(encodings.size());
  const int64_t cols = rows == 0 ? 0 : static_cast<int64_t>((encodings[0].*field).size());
  at::Tensor out = at::empty({rows, cols}, at::kLong);
  int64_t* data = out.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const auto& values = encodings[r].*field;
    BERTH_BUG(static_cast<int64_t>(values.size()) == cols, "the tokenizer left a batch row unpadded");
    std::copy(values.begin(), values.end(), data + r * cols);
  }
  return out.to(device);
}

}  // namespace

Predictor::Predictor(std::shared_ptr<TaskModel> model, tokenizer::Tokenizer tokenizer, LoadReport report,
                     c10::Device device, const PredictorOptions& options)
    : model_(std::move(model)),
      info_(model_->info()),
      tokenizer_(std::move(tokenizer)),
      report_(std::move(report)),
      device_(device),
      batch_size_(options.batch_size),
      generate_(options.generate) {}

Predictor Predictor::load(const std::string& dir, const PredictorOptions& options) {
  BERTH_CHECK(options.batch_size > 0, "predict: --batch-size must be at least 1, got 0");
  c10::Device device = resolve_device(parse_device(options.device), query_cuda());
  BERTH_CHECK(device.type() != c10::kMeta,
              "predict: the meta device holds no data, so nothing can be computed on it; use cpu or cuda");
  tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(dir);
  Pretrained<std::shared_ptr<TaskModel>> loaded = load_task_model(dir);
  BERTH_CHECK(
      loaded.report.missing.empty() && loaded.report.mismatched.empty(), "predict: ", dir,
      " is not a fine-tuned classifier: the checkpoint lacks ",
      loaded.report.missing.size() + loaded.report.mismatched.size(), " of the model's tensors (e.g. ",
      loaded.report.missing.empty() ? loaded.report.mismatched.front().name : loaded.report.missing.front(),
      "), which would be random. Fine-tune it first (berth train) or point --model at a fine-tuned "
      "model directory");
  std::shared_ptr<TaskModel> model = loaded.model;
  model->module().eval();
  place(model->module(), device, PlacementPolicy::Move);

  const int64_t max_positions = model->info().max_positions;
  size_t max_length = options.max_length;
  if (max_length == 0) {
    max_length = static_cast<size_t>(max_positions);
    if (tokenizer.model_max_length) max_length = std::min(max_length, *tokenizer.model_max_length);
  }
  BERTH_CHECK(max_length <= static_cast<size_t>(max_positions), "predict: --max-length ", max_length,
              " exceeds the model's max_position_embeddings (", max_positions, "); use at most ",
              max_positions);
  tokenizer::TruncationOptions truncation;
  truncation.max_length = max_length;
  truncation.keep_head = options.keep_head;
  tokenizer.set_truncation(truncation);
  PredictorOptions resolved = options;
  if (model->info().task == ModelTask::CausalLM) {
    // One prompt at a time, unpadded; generation stops at the tokenizer's EOS unless told otherwise.
    if (!resolved.generate.eos_token_id && tokenizer.special_tokens.eos)
      resolved.generate.eos_token_id = tokenizer.token_to_id(*tokenizer.special_tokens.eos);
  } else {
    tokenizer::PaddingOptions padding;
    padding.strategy = tokenizer::PaddingStrategy::Longest;
    padding.pad_id = tokenizer.pad_token_id();
    padding.pad_token = *tokenizer.special_tokens.pad;
    tokenizer.set_padding(padding);
  }
  return Predictor(std::move(model), std::move(tokenizer), std::move(loaded.report), device, resolved);
}

std::vector<Prediction> Predictor::generate_texts(const std::vector<tokenizer::EncodeInput>& inputs) const {
  std::vector<Prediction> predictions;
  for (const tokenizer::EncodeInput& input : inputs) {
    std::optional<std::string_view> pair;
    if (input.text_pair) pair = *input.text_pair;
    const tokenizer::Encoding encoding = tokenizer_.encode(input.text, pair);
    Prediction p;
    p.generated_ids = generate(*model_, encoding.ids, generate_, device_);
    p.generated_text = std::string(input.text) + tokenizer_.decode(p.generated_ids, true);
    predictions.push_back(std::move(p));
  }
  return predictions;
}

std::vector<Prediction> Predictor::predict(const std::vector<tokenizer::EncodeInput>& inputs) const {
  if (info_.task == ModelTask::CausalLM) return generate_texts(inputs);
  std::vector<Prediction> predictions;
  predictions.reserve(inputs.size());
  const std::vector<std::string>& labels = info_.labels;
  const std::string& problem_type = info_.problem_type;
  at::NoGradGuard no_grad;
  for (size_t begin = 0; begin < inputs.size(); begin += batch_size_) {
    const size_t end = std::min(inputs.size(), begin + batch_size_);
    std::vector<tokenizer::EncodeInput> chunk(inputs.begin() + begin, inputs.begin() + end);
    std::vector<tokenizer::Encoding> encodings = tokenizer_.encode_batch(chunk);
    const Batch batch{
        {"input_ids", stack_field(encodings, &tokenizer::Encoding::ids, device_)},
        {"attention_mask", stack_field(encodings, &tokenizer::Encoding::attention_mask, device_)},
        {"token_type_ids", stack_field(encodings, &tokenizer::Encoding::type_ids, device_)}};
    // logits: (B, num_labels) on the model's device -> CPU float for the output.
    at::Tensor logits = model_->forward_batch(batch).logits.to(at::kCPU).to(at::kFloat);
    at::Tensor probabilities;
    if (problem_type == kSingleLabelClassification) probabilities = logits.softmax(-1);
    if (problem_type == kMultiLabelClassification) probabilities = logits.sigmoid();
    for (int64_t row = 0; row < logits.size(0); ++row) {
      Prediction p;
      at::Tensor row_logits = logits[row].contiguous();
      p.logits.assign(row_logits.data_ptr<float>(), row_logits.data_ptr<float>() + row_logits.numel());
      if (problem_type == kRegression) {
        p.value = p.logits.empty() ? 0.0 : p.logits.front();
      } else {
        at::Tensor row_probs = probabilities[row].contiguous();
        p.probabilities.assign(row_probs.data_ptr<float>(), row_probs.data_ptr<float>() + row_probs.numel());
        p.label_id =
            std::max_element(p.probabilities.begin(), p.probabilities.end()) - p.probabilities.begin();
        p.label = labels.at(static_cast<size_t>(p.label_id));
        p.multi_label = problem_type == kMultiLabelClassification;
        if (p.multi_label)
          for (size_t i = 0; i < p.probabilities.size(); ++i)
            if (p.probabilities[i] > 0.5f) p.labels.push_back(labels.at(i));
      }
      predictions.push_back(std::move(p));
    }
  }
  return predictions;
}

}  // namespace berth
