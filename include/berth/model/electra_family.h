// The "electra" entry of the AutoModel family table.
#pragma once

#include "berth/model/auto_model.h"

namespace berth {

ModelFamily electra_family();

}  // namespace berth
