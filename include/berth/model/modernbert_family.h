// The "modernbert" entry of the AutoModel family table.
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily modernbert_family();

}  // namespace berth
