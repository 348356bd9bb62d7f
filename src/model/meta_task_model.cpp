// build_meta_task_model: the family's own constructor run with the Meta dispatch key included, so every
// factory call (empty, arange, the init functions) makes a meta tensor and nothing is allocated.
#include "berth/model/meta_task_model.h"

#include "berth/model/auto_model.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

namespace berth {

std::shared_ptr<TaskModel> build_meta_task_model(const PretrainedConfig& config, ModelTask task) {
  // Meta is the highest backend key, so with it included every operator dispatches to its meta kernel,
  // whatever device its options name; BackendSelect, which would route a factory call (empty, zeros) to
  // the device its options name, is excluded, so the factories make meta tensors too.
  c10::impl::IncludeDispatchKeyGuard meta(c10::DispatchKey::Meta);
  c10::impl::ExcludeDispatchKeyGuard no_backend_select(c10::DispatchKey::BackendSelect);
  return build_task_model(config, task, TaskModelInit{false, std::nullopt});
}

ParameterCounts count_parameters(TaskModel& model) {
  ParameterCounts counts;
  for (const auto& item : model.module().named_parameters()) counts.total += item.value().numel();
  counts.largest_block = largest_block_parameters(model);
  return counts;
}

}  // namespace berth
