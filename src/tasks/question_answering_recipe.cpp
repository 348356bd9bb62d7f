// Question answering: SQuAD-style examples in windows (run_qa.py), start/end logits postprocessed into
// answers (utils_qa.py), SQuAD's exact match and F1, and predictions as answer spans.
#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "berth/model/auto_model.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "tasks/prediction_lines.h"
#include "tasks/recipes.h"
#include "tasks/text_task.h"

namespace berth::tasks {
namespace {

// The window length of `berth eval` and `berth predict`: --max-length, else the training run's, else the
// model's limit.
size_t window_length(size_t max_length, const std::optional<data::EncodeTextOptions>& trained,
                     const TaskModelInfo& info) {
  if (max_length > 0) return max_length;
  if (trained) return trained->max_length;
  return static_cast<size_t>(info.max_positions);
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

class QuestionAnsweringRecipe final : public TaskRecipe {
 public:
  ModelTask task() const override { return ModelTask::QuestionAnswering; }
  TaskTraits traits() const override {
    TaskTraits traits;
    traits.batch_labels = data::BatchLabels::AnswerSpans;
    traits.evaluation = Evaluation::SpanLogits;
    return traits;
  }

  // Each split's examples in windows with their answers' token positions (run_qa.py); the metrics
  // postprocess answers from the eval and test splits' windows.
  TaskData load_training_data(const TaskDataRequest& request) const override {
    const data::DatasetSource& source = request.source;
    BERTH_CHECK(
        source.data.empty(), "train: --data ", source.data,
        " is a text classification set; question answering reads SQuAD-style files. Fix: --train "
        "FILE (and --eval FILE) in .jsonl ({id, question, context, answers}) or SQuAD's .json layout");
    BERTH_CHECK(!source.train.empty(),
                "train: no training data. Fix: --train FILE (.jsonl with {id, question, "
                "context, answers: {text: [...], answer_start: [...]}} a line, or SQuAD's .json)");
    TaskData data;
    std::vector<std::shared_ptr<const QuestionAnsweringSplit>> evaluated;
    std::string description;
    auto load = [&](const std::string& path, const char* name,
                    bool scored) -> std::shared_ptr<data::TokenizedDataset> {
      if (path.empty()) return nullptr;
      auto split = load_question_answering_split(path, request.tokenizer, request.max_length,
                                                 request.question_answering, /*labeled=*/true);
      if (scored) evaluated.push_back(split);
      description += (description.empty() ? "" : ", ") + std::to_string(split->examples.size()) + " " + name +
                     " questions (" + std::to_string(split->features.example_index.size()) + " windows)";
      return split->features.dataset;
    };
    data.train = load(source.train, "train", false);
    data.eval = load(source.eval, "eval", true);
    data.test = load(source.test, "test", true);
    data.text.description = "question answering: " + description;
    data.compute_metrics =
        question_answering_compute_metrics(std::move(evaluated), request.question_answering.postprocess);
    return data;
  }

  std::shared_ptr<data::TokenizedDataset> load_file(const FileRequest&) const override {
    BERTH_FAIL(
        "a dataset given after the Trainer was built is read for sequence classification, token "
        "classification and language models; question answering scores its answers against the examples of "
        "the splits the job loaded. Fix: pass the file as the job's eval_dataset (--eval FILE) or test data "
        "(--test FILE) instead");
  }

  LabelSmoothing label_smoothing(const TaskModelInfo&) const override { return LabelSmoothing::NotPredicted; }

  // --eval or --test, chosen by --split as for the other tasks.
  EvalData load_eval_data(const EvalRequest& request) const override {
    const EvalJobOptions& options = request.options;
    std::string input = validation_split(options) ? options.data.eval : options.data.test;
    if (input.empty()) input = options.data.test.empty() ? options.data.eval : options.data.test;
    BERTH_CHECK(!input.empty(),
                "eval: nothing to evaluate on. Fix: --eval FILE or --test FILE (.jsonl with {id, "
                "question, context, answers} a line, or SQuAD's .json)");
    const auto split = load_question_answering_split(
        input, request.tokenizer, window_length(options.max_length, request.trained, request.info),
        options.question_answering, /*labeled=*/true);
    EvalData eval;
    eval.dataset = split->features.dataset;
    eval.compute_metrics =
        question_answering_compute_metrics({split}, options.question_answering.postprocess);
    eval.title = "eval metrics (" + std::to_string(split->examples.size()) + " questions, " +
                 std::to_string(split->features.example_index.size()) + " windows)";
    return eval;
  }

  // One answer per question (see run_predict_job).
  size_t predict(const PredictRequest& request, std::ostream& out, std::ostream& log) const override {
    const PredictJobOptions& options = request.options;
    const tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(options.model);
    auto loaded = load_task_model(options.model, {}, ModelTask::QuestionAnswering);
    BERTH_CHECK(loaded.report.missing.empty(), "predict: ", options.model,
                " is not a trained question-answering model (it lacks ", loaded.report.missing.front(),
                "). Fix: predict with the output directory of `berth train --task question-answering`");
    const auto split = load_question_answering_split(
        options.input, tokenizer,
        window_length(options.predictor.max_length, request.trained, loaded.model->info()),
        options.question_answering, /*labeled=*/false);
    const PredictionOutput prediction =
        request.runner.predict(loaded.model, tokenizer, *split->features.dataset, nullptr, "predict");
    const auto answers =
        question_answering_answers(*split, prediction.logits, options.question_answering.postprocess);
    auto write = [&](std::ostream& to) {
      for (const auto& answer : answers) to << answer_json(answer).dump() << "\n";
    };
    write_prediction_lines(options.output, out, log, answers.size(), "answers", write);
    return answers.size();
  }
};

}  // namespace

const TaskRecipe& question_answering_recipe() {
  static const QuestionAnsweringRecipe recipe;
  return recipe;
}

}  // namespace berth::tasks
