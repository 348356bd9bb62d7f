// Masked and causal language modelling: the text alone, labels made by the collator (masked tokens, or the
// input ids shifted), evaluation as loss and perplexity, texts packed into blocks on request. The two
// recipes differ only in what a batch's labels are.
#include "tasks/recipes.h"
#include "tasks/text_task.h"

namespace berth::tasks {
namespace {

class LanguageModelRecipe final : public TaskRecipe {
 public:
  explicit LanguageModelRecipe(ModelTask task) : task_(task) {}
  ModelTask task() const override { return task_; }
  TaskTraits traits() const override {
    TaskTraits traits;
    const bool causal = task_ == ModelTask::CausalLM;
    traits.batch_labels = causal ? data::BatchLabels::InputIds : data::BatchLabels::MaskedTokens;
    traits.evaluation = Evaluation::Loss;
    traits.shifts_labels = causal;
    traits.packs_blocks = true;
    return traits;
  }

  TaskData load_training_data(const TaskDataRequest& request) const override {
    return load_text_training_data(request.source, /*labeled=*/false, std::nullopt);
  }
  std::shared_ptr<data::TokenizedDataset> load_file(const FileRequest& request) const override {
    return load_text_file(request, /*labeled=*/false);
  }
  EvalData load_eval_data(const EvalRequest& request) const override {
    return text_eval_data(request, /*labeled=*/false);
  }
  size_t predict(const PredictRequest& request, std::ostream& out, std::ostream& log) const override {
    return predict_texts(request, out, log);
  }

 private:
  ModelTask task_;
};

}  // namespace

const TaskRecipe& masked_lm_recipe() {
  static const LanguageModelRecipe recipe(ModelTask::MaskedLM);
  return recipe;
}

const TaskRecipe& causal_lm_recipe() {
  static const LanguageModelRecipe recipe(ModelTask::CausalLM);
  return recipe;
}

}  // namespace berth::tasks
