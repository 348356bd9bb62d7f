// The "gpt2" model family for AutoModel: GPT2LMHeadModel and GPT2ForSequenceClassification.
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily gpt2_family();

}  // namespace berth
