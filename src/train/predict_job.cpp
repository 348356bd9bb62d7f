// run_predict_job: what `berth predict` does, as one library call.
#include "berth/train/predict_job.h"

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "berth/core/output_path.h"
#include "berth/data/text_inputs.h"
#include "berth/model/auto_model.h"
#include "berth/model/pretrained_config.h"
#include "berth/train/encode_options.h"
#include "berth/train/question_answering_run.h"
#include "berth/train/word_tagging.h"
#include "train/prediction_output.h"

namespace berth::train {
namespace {

// --task, else what the checkpoint's architectures say.
ModelTask predict_task(const PredictJobOptions& options) {
  if (!options.task.empty()) return parse_task(options.task);
  return default_task(PretrainedConfig::load(options.model + "/config.json"));
}

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

// Classification, regression and causal LMs: the Predictor over {"text", "text_pair"?} lines.
size_t predict_texts(const PredictJobOptions& options, std::ostream& out, std::ostream& log) {
  std::vector<tokenizer::EncodeInput> inputs = data::encode_inputs(data::read_text_inputs(options.input));
  // Inputs cut as the model learned them (berth train's training_args.json, when the dir has one).
  PredictorOptions predictor_options = options.predictor;
  if (auto trained = trained_encode_options(options.model)) {
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

}  // namespace

size_t run_predict_job(const PredictJobOptions& options, std::ostream& out, std::ostream& log) {
  // Before the model loads: a bad --output would otherwise fail only after every prediction.
  if (!options.output.empty()) check_output_file(options.output, "--output");
  const ModelTask task = predict_task(options);
  if (task == ModelTask::QuestionAnswering)
    return run_question_answering_predict(
        {options.model, options.input, options.output, options.predictor.batch_size,
         options.predictor.max_length, options.predictor.device, false, options.question_answering},
        out, log);
  // A token classifier labels words, not texts (word_tagging.h).
  if (task == ModelTask::TokenClassification)
    return tag_words(options.model, options.input, options.output, options.predictor.device,
                     options.predictor.max_length, out, log);
  return predict_texts(options, out, log);
}

}  // namespace berth::train
