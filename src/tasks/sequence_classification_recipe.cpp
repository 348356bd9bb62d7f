// Sequence classification (and regression): a label or value per text, the checkpoint's named classes kept
// when the data's labels are their integer ids, accuracy/F1 or MSE over the gathered logits.
#include <algorithm>

#include "berth/core/error.h"
#include "berth/model/problem_type.h"
#include "berth/tasks/metrics.h"
#include "tasks/recipes.h"
#include "tasks/text_task.h"

namespace berth::tasks {
namespace {

// A fine-tuned classifier's named classes: its id2label when the names are not HF's defaults (LABEL_0,
// LABEL_1 ...), else nullopt.
std::optional<data::LabelMap> named_checkpoint_classes(const PretrainedConfig& checkpoint) {
  std::vector<std::string> names;
  bool named = false;
  for (const auto& [id, name] : checkpoint.id2label) {
    names.push_back(name);
    named = named || name != "LABEL_" + std::to_string(id);
  }
  return named ? std::optional<data::LabelMap>(data::LabelMap(names)) : std::nullopt;
}

// Whether `observed` holds labels (regression has none) and every one is an integer class id below `classes`.
bool all_class_ids(const data::LabelMap& observed, size_t classes) {
  return !observed.empty() &&
         std::all_of(observed.labels().begin(), observed.labels().end(), [&](const std::string& label) {
           const bool digits =
               !label.empty() && label.size() < 10 &&
               std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; });
           return digits && std::stoull(label) < classes;
         });
}

class SequenceClassificationRecipe final : public TaskRecipe {
 public:
  ModelTask task() const override { return ModelTask::SequenceClassification; }
  TaskTraits traits() const override { return {}; }

  // The training file's labels, or, when they are all integer class ids of a checkpoint's named classes,
  // those classes (HF datasets' ClassLabel integers index them; the head and the names stay).
  TaskData load_training_data(const TaskDataRequest& request) const override {
    const data::DatasetSource& source = request.source;
    std::optional<data::LabelMap> fixed;
    std::optional<data::LabelMap> named;
    if (request.checkpoint && source.data.empty() && !source.train.empty())
      named = named_checkpoint_classes(*request.checkpoint);
    if (named) {
      data::DatasetSource train_only = source;  // the training labels decide; eval and test follow them
      train_only.eval.clear();
      train_only.test.clear();
      train_only.labeled = true;
      if (all_class_ids(data::load_datasets(train_only, std::nullopt).label_map, named->size()))
        fixed = named;
    }
    return load_text_training_data(source, /*labeled=*/true, fixed);
  }

  std::shared_ptr<data::TokenizedDataset> load_file(const FileRequest& request) const override {
    return load_text_file(request, /*labeled=*/request.labels.size() > 0);
  }

  std::optional<HeadLabels> head_labels(const data::LoadedDatasets& data) const override {
    return HeadLabels{data.label_map.labels(), data::to_string(data.problem_type)};
  }

  LabelSmoothing label_smoothing(const TaskModelInfo& info) const override {
    if (info.problem_type == kMultiLabelClassification) return LabelSmoothing::Disabled;
    BERTH_CHECK(info.problem_type != kRegression, "label_smoothing_factor: ", info.architecture,
                " is a regression model (problem_type regression): its one float label has no classes to "
                "smooth over. Fix: leave --label_smoothing_factor at 0 for regression");
    return LabelSmoothing::Applies;
  }

  // sklearn's accuracy, precision, recall and F1 (single-label), or MSE/MAE/RMSE (regression); none for
  // multi-label classification.
  std::map<std::string, double> metrics(const EvalPrediction& prediction, const TaskModelInfo& info,
                                        std::vector<std::vector<int64_t>>* confusion) const override {
    if (info.problem_type == kSingleLabelClassification)
      return classification_metrics(prediction.logits, prediction.label_ids, confusion);
    if (info.problem_type == kRegression) return regression_metrics(prediction.logits, prediction.label_ids);
    return {};
  }

  EvalData load_eval_data(const EvalRequest& request) const override {
    return text_eval_data(request, /*labeled=*/true);
  }

  size_t predict(const PredictRequest& request, std::ostream& out, std::ostream& log) const override {
    return predict_texts(request, out, log);
  }
};

}  // namespace

const TaskRecipe& sequence_classification_recipe() {
  static const SequenceClassificationRecipe recipe;
  return recipe;
}

}  // namespace berth::tasks
