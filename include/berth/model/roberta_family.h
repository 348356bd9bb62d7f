// The "roberta" and "xlm-roberta" entries of the AutoModel family table.
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily roberta_family();
ModelFamily xlm_roberta_family();

}  // namespace berth
