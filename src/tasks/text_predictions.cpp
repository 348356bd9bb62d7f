// The text tasks' predictions: the Predictor over {"text", "text_pair"?} lines, one JSON line each.
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "berth/data/text_inputs.h"
#include "tasks/prediction_lines.h"
#include "tasks/text_task.h"

namespace berth::tasks {
namespace {

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json line;
  if (p.generated_text) {
    line["generated_text"] = *p.generated_text;
    line["generated_ids"] = p.generated_ids;
    return line;
  }
  if (p.value) {
    line["label"] = *p.value;
  } else {
    line["label"] = p.label;
  }
  if (p.multi_label) line["labels"] = p.labels;  // a single label has no list to print
  line["logits"] = p.logits;
  if (!p.probabilities.empty()) line["probabilities"] = p.probabilities;
  return line;
}

}  // namespace

size_t predict_texts(const PredictRequest& request, std::ostream& out, std::ostream& log) {
  const PredictJobOptions& options = request.options;
  std::vector<tokenizer::EncodeInput> inputs = data::encode_inputs(data::read_text_inputs(options.input));
  // Inputs cut as the model learned them (berth train's training_args.json, when the dir has one).
  PredictorOptions predictor_options = options.predictor;
  if (const auto& trained = request.trained) {
    if (predictor_options.max_length == 0) predictor_options.max_length = trained->max_length;
    predictor_options.keep_head = trained->keep_head;
  }
  Predictor predictor = Predictor::load(options.model, predictor_options);
  for (const std::string& warning : predictor.load_report().warnings) log << "warning: " << warning << "\n";
  std::vector<Prediction> predictions = predictor.predict(inputs);
  auto write = [&](std::ostream& to) {
    for (const Prediction& p : predictions) to << prediction_json(p).dump() << "\n";
  };
  write_prediction_lines(options.output, out, log, predictions.size(), "predictions", write);
  return predictions.size();
}

}  // namespace berth::tasks
