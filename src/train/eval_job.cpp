// run_eval_job: what `berth eval` does, as one library call.
#include "berth/train/eval_job.h"

#include <memory>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/core/output_path.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/model/auto_model.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/encode_options.h"
#include "berth/train/metrics_text.h"
#include "berth/train/question_answering_run.h"
#include "berth/train/token_classification_data.h"
#include "berth/train/trainer.h"

namespace berth::train {
namespace {

bool validation_split(const EvalJobOptions& options) {
  return options.split == "validation" || options.split == "eval";
}

// A token classifier's evaluation split: --test, else --eval (words and tags, the model's labels).
data::TokenizedDataset tagged_eval_split(data::DatasetSource source, const tokenizer::Tokenizer& tokenizer,
                                         size_t max_length, const data::LabelMap& labels) {
  if (!source.test.empty()) source.eval.clear();
  BERTH_CHECK(!source.test.empty() || !source.eval.empty(),
              "eval: nothing to evaluate on. Fix: --test FILE.jsonl or --eval FILE.jsonl (\"tokens\" and "
              "\"ner_tags\" per row)");
  const TokenClassificationData tagged =
      load_token_classification_data(source, tokenizer, max_length, labels);
  return *(tagged.test ? tagged.test : tagged.eval);
}

// A question-answering model reads SQuAD-style files: --eval/--test chosen by --split as for the others.
std::map<std::string, double> eval_question_answering(const EvalJobOptions& options,
                                                      std::shared_ptr<TaskModel> model,
                                                      const tokenizer::Tokenizer& tokenizer,
                                                      std::ostream& out) {
  std::string input = validation_split(options) ? options.data.eval : options.data.test;
  if (input.empty()) input = options.data.test.empty() ? options.data.eval : options.data.test;
  BERTH_CHECK(!input.empty(),
              "eval: nothing to evaluate on. Fix: --eval FILE or --test FILE (.jsonl with {id, "
              "question, context, answers} a line, or SQuAD's .json)");
  QuestionAnsweringRun run{options.model,      input,          options.output, options.batch_size,
                           options.max_length, options.device, options.bf16,   options.question_answering};
  return run_question_answering_eval(run, std::move(model), tokenizer, out);
}

// The split --split names, else test, else validation; unset when the source has none of them.
const std::optional<data::TextDataset>& chosen_split(const EvalJobOptions& options,
                                                     const data::LoadedDatasets& data) {
  const std::optional<data::TextDataset>* chosen = &data.test;
  if (validation_split(options)) chosen = &data.eval;
  if (options.split == "train") chosen = &data.train;
  if (!*chosen) chosen = data.test ? &data.test : &data.eval;
  return *chosen;
}

// The length and truncation the model was trained with (its training_args.json), else what the model and
// its tokenizer allow; --max-length over both.
data::EncodeTextOptions eval_encoding(const EvalJobOptions& options, const TaskModelInfo& info,
                                      const tokenizer::Tokenizer& tokenizer) {
  data::EncodeTextOptions encoding;
  encoding.max_length =
      static_cast<size_t>(model_input_limit(info.max_positions, tokenizer.model_max_length));
  if (auto trained = trained_encode_options(options.model)) encoding = *trained;
  if (options.max_length > 0) encoding.max_length = options.max_length;
  BERTH_CHECK(encoding.max_length <= static_cast<size_t>(info.max_positions), "eval: --max-length ",
              encoding.max_length, " exceeds the model's max_position_embeddings (", info.max_positions,
              "). Fix: --max-length ", info.max_positions, " or less (0: the model's limit)");
  return encoding;
}

Trainer make_eval_trainer(const EvalJobOptions& options, std::shared_ptr<TaskModel> model,
                          const tokenizer::Tokenizer& tokenizer) {
  TrainerOptions trainer_options;
  trainer_options.args.output_dir = options.model;
  trainer_options.args.per_device_eval_batch_size = static_cast<int64_t>(options.batch_size);
  trainer_options.args.device = options.device;
  trainer_options.args.bf16 = options.bf16;
  trainer_options.args.seed = options.seed;
  trainer_options.model = std::move(model);
  trainer_options.tokenizer = tokenizer;
  trainer_options.masking.mlm_probability = options.masking.mlm_probability;
  trainer_options.masking.whole_word_mask = options.masking.whole_word_mask;
  return Trainer(std::move(trainer_options));
}

// A classifier, tagger or language model on its split: the metrics to `out` and to options.output.
std::map<std::string, double> eval_texts(const EvalJobOptions& options, std::shared_ptr<TaskModel> model,
                                         const tokenizer::Tokenizer& tokenizer, std::ostream& out) {
  const TaskModelInfo info = model->info();
  const std::vector<std::string>& model_labels = info.labels;
  const bool classifier = info.task == ModelTask::SequenceClassification;
  const bool tagger = info.task == ModelTask::TokenClassification;
  data::DatasetSource source = options.data;
  source.labeled = classifier || tagger;  // a language model is evaluated on the text alone
  data::LoadedDatasets data;
  if (!tagger)
    data = data::load_datasets(
        source, classifier ? std::optional<data::LabelMap>(data::LabelMap(model_labels)) : std::nullopt);
  const std::optional<data::TextDataset>& chosen = chosen_split(options, data);
  BERTH_CHECK(chosen || tagger,
              "eval: nothing to evaluate on. Fix: --data spamassassin (with --split test|validation) or "
              "--eval FILE / --test FILE");
  const data::EncodeTextOptions encoding = eval_encoding(options, info, tokenizer);
  Trainer trainer = make_eval_trainer(options, std::move(model), tokenizer);
  const data::TokenizedDataset dataset =
      tagger ? tagged_eval_split(source, tokenizer, encoding.max_length, data::LabelMap(model_labels))
             : data::encode_text_dataset(*chosen, tokenizer, encoding);
  const auto prediction = trainer.predict(dataset, "eval");
  write_metrics(out, "eval metrics (" + std::to_string(dataset.size()) + " examples)", prediction.metrics);
  if (!prediction.confusion.empty())
    out << "confusion matrix:\n" << format_confusion_table(prediction.confusion, model_labels);
  if (!options.output.empty()) {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [name, value] : prediction.metrics) json[name] = value;
    write_file_atomically(options.output, json.dump(4) + "\n");
  }
  return prediction.metrics;
}

}  // namespace

std::map<std::string, double> run_eval_job(const EvalJobOptions& options, std::ostream& out) {
  BERTH_CHECK(options.batch_size >= 1, "eval: --batch-size must be at least 1, found ", options.batch_size,
              ". Fix: --batch-size 32");
  if (!options.output.empty()) check_output_file(options.output, "--output");
  const tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(options.model);
  std::optional<ModelTask> task;
  if (!options.task.empty()) task = parse_task(options.task);
  auto loaded = load_task_model(options.model, {}, task);
  const TaskModelInfo info = loaded.model->info();
  BERTH_CHECK(
      loaded.report.missing.empty(), "eval: ", options.model, " is not a trained ", task_name(info.task),
      " model (it lacks ", loaded.report.missing.front(),
      "). Fix: evaluate the output directory of `berth train`, or pass the --task it was trained for");
  if (info.task == ModelTask::QuestionAnswering)
    return eval_question_answering(options, loaded.model, tokenizer, out);
  return eval_texts(options, loaded.model, tokenizer, out);
}

}  // namespace berth::train
