// ModelTask: the task heads berth trains (HF's AutoModelFor* classes), by the names the CLI takes.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace berth {

enum class ModelTask { SequenceClassification, TokenClassification, MaskedLM, CausalLM, QuestionAnswering };

// "sequence-classification", "token-classification", "masked-lm", "causal-lm", "question-answering".
const char* task_name(ModelTask task);
// The inverse of task_name; anything else throws berth::Error listing the names.
ModelTask parse_task(const std::string& name);
const std::vector<ModelTask>& all_tasks();
// HF's class-name suffix: "ForSequenceClassification", "ForTokenClassification", "ForMaskedLM",
// "ForCausalLM", "ForQuestionAnswering".
const char* head_suffix(ModelTask task);
// The task an HF architecture name is for ("RobertaForMaskedLM" -> MaskedLM, "GPT2LMHeadModel" -> CausalLM);
// nullopt for a bare base model ("BertModel") or a head berth has no task for ("BertForPreTraining").
std::optional<ModelTask> task_of_architecture(const std::string& architecture);

}  // namespace berth
