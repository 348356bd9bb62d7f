// gather_rows: every rank's share of a dataset's rows (an evaluation's logits), put back together in dataset
// order on every rank.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "berth/dist/communicator.h"

namespace berth::dist {

// `rows`: the dataset indices of this rank's rows, in the order of `values`. Collective.
// values: (R, C) float CPU -> (N, C), N = dataset_size; rows no rank sent stay 0.
at::Tensor gather_rows(Communicator& comm, const std::vector<size_t>& rows, const at::Tensor& values,
                       int64_t dataset_size, int64_t columns);

}  // namespace berth::dist
