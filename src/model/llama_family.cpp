// The Llama-style families: one LlamaTaskModel implementation serves llama, mistral and qwen2, each its own
// model_type with HF's class names.
#include "berth/model/llama_family.h"

#include "berth/model/llama_model.h"

namespace berth {
namespace {

ModelFamily llama_style_family(const std::string& model_type) {
  ModelFamily family;
  family.model_type = model_type;
  family.tasks = {ModelTask::CausalLM, ModelTask::SequenceClassification};
  family.build = [](const PretrainedConfig& config, ModelTask task, const TaskModelInit& init) {
    LlamaTaskModel model(config, task, init);
    return std::shared_ptr<TaskModel>(model.ptr());
  };
  family.layout = llama_checkpoint_layout;
  return family;
}

}  // namespace

ModelFamily llama_family() { return llama_style_family("llama"); }
ModelFamily mistral_family() { return llama_style_family("mistral"); }
ModelFamily qwen2_family() { return llama_style_family("qwen2"); }

}  // namespace berth
