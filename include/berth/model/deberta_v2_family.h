// The "deberta-v2" entry of the AutoModel family table (DeBERTa-v2 and DeBERTa-v3 checkpoints).
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily deberta_v2_family();

}  // namespace berth
