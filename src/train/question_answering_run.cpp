// run_question_answering_eval / run_question_answering_predict: SQuAD-style files through a trained model.
#include "berth/train/question_answering_run.h"

#include <ostream>

#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/model/auto_model.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/encode_options.h"
#include "berth/train/metrics_text.h"
#include "berth/train/trainer.h"
#include "train/prediction_output.h"

namespace berth::train {
namespace {

// The window length: --max-length, else the training run's, else the model's limit.
size_t window_length(const QuestionAnsweringRun& run, const TaskModel& model) {
  if (run.max_length > 0) return run.max_length;
  if (auto trained = trained_encode_options(run.model_dir)) return trained->max_length;
  return static_cast<size_t>(model.info().max_positions);
}

Trainer make_trainer(const QuestionAnsweringRun& run, std::shared_ptr<TaskModel> model,
                     const tokenizer::Tokenizer& tokenizer, ComputeMetrics metrics) {
  TrainerOptions options;
  options.args.output_dir = run.model_dir;
  options.args.per_device_eval_batch_size = static_cast<int64_t>(run.batch_size);
  options.args.device = run.device;
  options.args.bf16 = run.bf16;
  options.model = std::move(model);
  options.tokenizer = tokenizer;
  options.compute_metrics = std::move(metrics);
  return Trainer(std::move(options));
}

nlohmann::json answer_json(const QuestionAnsweringAnswer& answer) {
  nlohmann::json line = {{"id", answer.id},
                         {"answer", answer.text},
                         {"start", answer.start},
                         {"end", answer.end},
                         {"score", answer.probability}};
  if (answer.score_diff) line["score_diff"] = *answer.score_diff;
  return line;
}

}  // namespace

std::map<std::string, double> run_question_answering_eval(const QuestionAnsweringRun& run,
                                                          std::shared_ptr<TaskModel> model,
                                                          const tokenizer::Tokenizer& tokenizer,
                                                          std::ostream& out) {
  const auto split = load_question_answering_split(run.input, tokenizer, window_length(run, *model),
                                                   run.options, /*labeled=*/true);
  Trainer trainer = make_trainer(run, std::move(model), tokenizer,
                                 question_answering_compute_metrics({split}, run.options.postprocess));
  const auto prediction = trainer.predict(*split->features.dataset, "eval");
  write_metrics(out,
                "eval metrics (" + std::to_string(split->examples.size()) + " questions, " +
                    std::to_string(split->features.example_index.size()) + " windows)",
                prediction.metrics);
  if (!run.output.empty()) {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [name, value] : prediction.metrics) json[name] = value;
    write_file_atomically(run.output, json.dump(4) + "\n");
  }
  return prediction.metrics;
}

size_t run_question_answering_predict(const QuestionAnsweringRun& run, std::ostream& out, std::ostream& log) {
  const tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(run.model_dir);
  auto loaded = load_task_model(run.model_dir, {}, ModelTask::QuestionAnswering);
  BERTH_CHECK(loaded.report.missing.empty(), "predict: ", run.model_dir,
              " is not a trained question-answering model (it lacks ", loaded.report.missing.front(),
              "). Fix: predict with the output directory of `berth train --task question-answering`");
  const auto split = load_question_answering_split(run.input, tokenizer, window_length(run, *loaded.model),
                                                   run.options, /*labeled=*/false);
  Trainer trainer = make_trainer(run, loaded.model, tokenizer, nullptr);
  const auto prediction = trainer.predict(*split->features.dataset, "predict");
  const auto answers = question_answering_answers(*split, prediction.logits, run.options.postprocess);
  auto write = [&](std::ostream& to) {
    for (const auto& answer : answers) to << answer_json(answer).dump() << "\n";
  };
  write_prediction_lines(run.output, out, log, answers.size(), "answers", write);
  return answers.size();
}

}  // namespace berth::train
