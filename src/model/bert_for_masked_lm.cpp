// BertForMaskedLM from a BertConfig: the config as PretrainedConfig, BERT's masked-LM checkpoint layout, and
// the per-token encoder model that load_task_model builds.
#include "berth/model/bert_for_masked_lm.h"

#include "berth/model/bert_family.h"

namespace berth {

BertForMaskedLmImpl::BertForMaskedLmImpl(const BertConfig& config, const BertInitOptions& init)
    : BertForMaskedLmImpl(PretrainedConfig::from_json_text(config.to_json_text(), "BertConfig"), init) {}

BertForMaskedLmImpl::BertForMaskedLmImpl(const PretrainedConfig& config, const BertInitOptions& init)
    : BertTokenTaskModel(config, ModelTask::MaskedLM, bert_checkpoint_layout(config, ModelTask::MaskedLM),
                         TaskModelInit{init.random, init.seed}) {}

}  // namespace berth
