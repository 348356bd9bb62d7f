// The Llama-style model families for AutoModel: "llama", "mistral" and "qwen2", each with *ForCausalLM and
// *ForSequenceClassification.
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily llama_family();
ModelFamily mistral_family();
ModelFamily qwen2_family();

}  // namespace berth
