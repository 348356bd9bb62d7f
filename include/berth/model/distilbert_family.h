// The "distilbert" entry of the AutoModel family table.
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily distilbert_family();

}  // namespace berth
