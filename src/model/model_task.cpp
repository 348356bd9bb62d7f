// ModelTask names, HF's class-name suffixes, and the task an architecture name is for.
#include "berth/model/model_task.h"

#include "berth/core/error.h"

namespace berth {
namespace {

struct TaskNames {
  ModelTask task;
  const char* name;
  const char* suffix;
};

constexpr TaskNames kTasks[] = {
    {ModelTask::SequenceClassification, "sequence-classification", "ForSequenceClassification"},
    {ModelTask::TokenClassification, "token-classification", "ForTokenClassification"},
    {ModelTask::MaskedLM, "masked-lm", "ForMaskedLM"},
    {ModelTask::CausalLM, "causal-lm", "ForCausalLM"},
    {ModelTask::QuestionAnswering, "question-answering", "ForQuestionAnswering"},
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const char* task_name(ModelTask task) {
  for (const TaskNames& t : kTasks)
    if (t.task == task) return t.name;
  BERTH_BUG(false, "a ModelTask without a name");
}

const char* head_suffix(ModelTask task) {
  for (const TaskNames& t : kTasks)
    if (t.task == task) return t.suffix;
  BERTH_BUG(false, "a ModelTask without a suffix");
}

const std::vector<ModelTask>& all_tasks() {
  static const std::vector<ModelTask> tasks = [] {
    std::vector<ModelTask> out;
    for (const TaskNames& t : kTasks) out.push_back(t.task);
    return out;
  }();
  return tasks;
}

ModelTask parse_task(const std::string& name) {
  std::string names;
  for (const TaskNames& t : kTasks) {
    if (name == t.name) return t.task;
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  BERTH_FAIL("unknown task \"", name, "\"; berth's tasks are ", names,
             ". Fix: pass one of those (--task sequence-classification for a classifier)");
}

std::optional<ModelTask> task_of_architecture(const std::string& architecture) {
  for (const TaskNames& t : kTasks)
    if (ends_with(architecture, t.suffix)) return t.task;
  // GPT-2's and a few other decoders' language-model class.
  if (ends_with(architecture, "LMHeadModel")) return ModelTask::CausalLM;
  return std::nullopt;
}

}  // namespace berth
