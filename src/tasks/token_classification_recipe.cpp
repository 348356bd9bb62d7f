// Token classification: words and tags (run_ner.py's files), labels kept from a checkpoint trained for named
// ones, per-token logits scored by seqeval, and predictions as labelled words and entities.
#include "berth/core/error.h"
#include "berth/tasks/seqeval_metrics.h"
#include "berth/tasks/token_classification_data.h"
#include "berth/tasks/word_tagging.h"
#include "tasks/recipes.h"
#include "tasks/text_task.h"

namespace berth::tasks {
namespace {

class TokenClassificationRecipe final : public TaskRecipe {
 public:
  ModelTask task() const override { return ModelTask::TokenClassification; }
  TaskTraits traits() const override {
    TaskTraits traits;
    traits.batch_labels = data::BatchLabels::TokenLabels;
    traits.evaluation = Evaluation::TokenLogits;
    return traits;
  }

  // Words and tags, encoded as they load, with the checkpoint's labels when its head was trained for named
  // ones (run_ner.py keeps them).
  TaskData load_training_data(const TaskDataRequest& request) const override {
    data::DatasetSource source = request.source;
    source.labeled = true;
    TokenClassificationData tagged = load_token_classification_data(
        source, request.tokenizer, request.max_length,
        request.checkpoint ? checkpoint_token_labels(*request.checkpoint) : std::nullopt);
    BERTH_CHECK(tagged.train,
                "train: no training data. Fix: --train FILE.jsonl (\"tokens\" and \"ner_tags\")");
    TaskData data;
    data.text.label_map = tagged.labels;
    data.text.description = tagged.description;
    data.train = tagged.train;
    data.eval = tagged.eval;
    data.test = tagged.test;
    return data;
  }

  // The file's words and tags against the job's labels.
  std::shared_ptr<data::TokenizedDataset> load_file(const FileRequest& request) const override {
    return load_token_classification_data(file_source(request, /*labeled=*/true), request.tokenizer,
                                          request.encoding.max_length, request.labels)
        .test;
  }

  std::optional<HeadLabels> head_labels(const data::LoadedDatasets& data) const override {
    return HeadLabels{data.label_map.labels(), std::nullopt};
  }

  // run_ner.py's seqeval scores of the words' first sub-tokens.
  std::map<std::string, double> metrics(const EvalPrediction& prediction, const TaskModelInfo& info,
                                        std::vector<std::vector<int64_t>>*) const override {
    return token_classification_metrics(prediction.logits, prediction.label_ids, info.labels);
  }

  // --test, else --eval (words and tags, the model's labels).
  EvalData load_eval_data(const EvalRequest& request) const override {
    data::DatasetSource source = request.options.data;
    source.labeled = true;
    if (!source.test.empty()) source.eval.clear();
    BERTH_CHECK(!source.test.empty() || !source.eval.empty(),
                "eval: nothing to evaluate on. Fix: --test FILE.jsonl or --eval FILE.jsonl (\"tokens\" and "
                "\"ner_tags\" per row)");
    const TokenClassificationData tagged = load_token_classification_data(
        source, request.tokenizer, eval_encoding(request).max_length, data::LabelMap(request.info.labels));
    EvalData eval;
    eval.dataset = tagged.test ? tagged.test : tagged.eval;
    eval.title = "eval metrics (" + std::to_string(eval.dataset->size()) + " examples)";
    return eval;
  }

  size_t predict(const PredictRequest& request, std::ostream& out, std::ostream& log) const override {
    const PredictJobOptions& options = request.options;
    return tag_words(options.model, options.input, options.output, options.predictor.device,
                     options.predictor.max_length, out, log);
  }
};

}  // namespace

const TaskRecipe& token_classification_recipe() {
  static const TokenClassificationRecipe recipe;
  return recipe;
}

}  // namespace berth::tasks
