// load_task_model: one place that maps a checkpoint's config.json to a model family and head.
#include "berth/model/auto_model.h"

namespace berth {

Pretrained<std::shared_ptr<TaskModel>> load_task_model(const std::string& dir,
                                                       const PretrainedOptions& options) {
  // BertConfig's reader refuses any model_type but "bert" with the list of what berth implements.
  Pretrained<BertForSequenceClassification> loaded =
      from_pretrained<BertForSequenceClassification>(dir, options);
  return {loaded.model.ptr(), std::move(loaded.report)};
}

}  // namespace berth
