// The text tasks' data: a training job's text, a later file, and the split `berth eval` encodes.
#include "tasks/text_task.h"

#include <string>

#include "berth/core/error.h"
#include "berth/tasks/input_limit.h"

namespace berth::tasks {
namespace {

// The split --split names, else test, else validation; unset when the source has none of them.
const std::optional<data::TextDataset>& chosen_split(const EvalJobOptions& options,
                                                     const data::LoadedDatasets& data) {
  const std::optional<data::TextDataset>* chosen = &data.test;
  if (validation_split(options)) chosen = &data.eval;
  if (options.split == "train") chosen = &data.train;
  if (!*chosen) chosen = data.test ? &data.test : &data.eval;
  return *chosen;
}

}  // namespace

TaskData load_text_training_data(data::DatasetSource source, bool labeled,
                                 const std::optional<data::LabelMap>& fixed) {
  source.labeled = labeled;
  TaskData data;
  data.text = data::load_datasets(source, fixed);
  BERTH_CHECK(data.text.train, "train: no training data. Fix: --data spamassassin or --train FILE");
  return data;
}

data::DatasetSource file_source(const FileRequest& request, bool labeled) {
  data::DatasetSource source = request.source;
  source.data.clear();
  source.train.clear();
  source.eval.clear();
  source.test = request.path;
  source.labeled = labeled;
  return source;
}

std::shared_ptr<data::TokenizedDataset> load_text_file(const FileRequest& request, bool labeled) {
  const data::DatasetSource source = file_source(request, labeled);
  const data::LoadedDatasets loaded =
      data::load_datasets(source, labeled ? std::optional<data::LabelMap>(request.labels) : std::nullopt);
  return std::make_shared<data::TokenizedDataset>(
      data::encode_text_dataset(*loaded.test, request.tokenizer, request.encoding));
}

bool validation_split(const EvalJobOptions& options) {
  return options.split == "validation" || options.split == "eval";
}

data::EncodeTextOptions eval_encoding(const EvalRequest& request) {
  const TaskModelInfo& info = request.info;
  data::EncodeTextOptions encoding;
  encoding.max_length =
      static_cast<size_t>(model_input_limit(info.max_positions, request.tokenizer.model_max_length));
  if (request.trained) encoding = *request.trained;
  if (request.options.max_length > 0) encoding.max_length = request.options.max_length;
  BERTH_CHECK(encoding.max_length <= static_cast<size_t>(info.max_positions), "eval: --max-length ",
              encoding.max_length, " exceeds the model's max_position_embeddings (", info.max_positions,
              "). Fix: --max-length ", info.max_positions, " or less (0: the model's limit)");
  return encoding;
}

EvalData text_eval_data(const EvalRequest& request, bool labeled) {
  data::DatasetSource source = request.options.data;
  source.labeled = labeled;  // a language model is evaluated on the text alone
  const data::LoadedDatasets data = data::load_datasets(
      source, labeled ? std::optional<data::LabelMap>(data::LabelMap(request.info.labels)) : std::nullopt);
  const std::optional<data::TextDataset>& chosen = chosen_split(request.options, data);
  BERTH_CHECK(chosen,
              "eval: nothing to evaluate on. Fix: --data spamassassin (with --split test|validation) or "
              "--eval FILE / --test FILE");
  EvalData eval;
  eval.dataset = std::make_shared<data::TokenizedDataset>(
      data::encode_text_dataset(*chosen, request.tokenizer, eval_encoding(request)));
  eval.title = "eval metrics (" + std::to_string(eval.dataset->size()) + " examples)";
  return eval;
}

}  // namespace berth::tasks
