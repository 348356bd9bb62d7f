// gather_rows: each rank's (row ids, values) packed as bytes, all-gathered, and unpacked into place.
#include "berth/dist/gather_rows.h"

#include <ATen/ATen.h>

#include <cstring>
#include <string>

#include "berth/core/error.h"

namespace berth::dist {

namespace {

// [R int64 row ids][R x C float values]
std::string pack_rows(const std::vector<size_t>& rows, const at::Tensor& values) {
  const at::Tensor local = values.contiguous();
  const size_t id_bytes = rows.size() * sizeof(int64_t);
  std::string bytes(id_bytes + static_cast<size_t>(local.numel()) * sizeof(float), '\0');
  const std::vector<int64_t> ids(rows.begin(), rows.end());
  std::memcpy(bytes.data(), ids.data(), id_bytes);
  std::memcpy(bytes.data() + id_bytes, local.data_ptr<float>(),
              static_cast<size_t>(local.numel()) * sizeof(float));
  return bytes;
}

// One rank's bytes into `out`'s rows.
void unpack_rows(const std::string& part, int64_t columns, at::TensorAccessor<float, 2> out) {
  const size_t row_bytes = sizeof(int64_t) + static_cast<size_t>(columns) * sizeof(float);
  BERTH_BUG(part.size() % row_bytes == 0, "a rank sent ", part.size(), " bytes of evaluation rows");
  const size_t n = part.size() / row_bytes;
  std::vector<int64_t> ids(n);
  std::memcpy(ids.data(), part.data(), n * sizeof(int64_t));
  const auto* values = reinterpret_cast<const float*>(part.data() + n * sizeof(int64_t));
  for (size_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < columns; ++c) out[ids[i]][c] = values[i * static_cast<size_t>(columns) + c];
}

}  // namespace

at::Tensor gather_rows(Communicator& comm, const std::vector<size_t>& rows, const at::Tensor& values,
                       int64_t dataset_size, int64_t columns) {
  if (comm.world_size() == 1) return values;
  const std::vector<std::string> parts =
      comm.all_gather_string(pack_rows(rows, values), "gathering the evaluation's logits");
  at::Tensor full = at::zeros({dataset_size, columns}, at::kFloat);
  for (const std::string& part : parts) unpack_rows(part, columns, full.accessor<float, 2>());
  return full;
}

}  // namespace berth::dist
