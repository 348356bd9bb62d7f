// libFuzzer target: parse_safetensors_header must throw berth::Error or return a header that holds its
// promises.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/io/safetensors_header.h"

namespace {

// A broken promise is a crash the fuzzer records, with the reason on stderr.
void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "safetensors_header_fuzzer: accepted header breaks: %s\n", what);
  __builtin_trap();
}

void check(const berth::io::SafetensorsHeader& header, const uint8_t* data, size_t size) {
  require(header.data_offset >= 8 && header.data_offset <= size, "data offset inside the file");
  const uint64_t buffer = size - header.data_offset;
  uint64_t covered = 0;
  for (const auto& entry : header.entries) {
    require(entry.begin == covered && entry.begin <= entry.end, "spans tile the buffer in order");
    // Elements first, then bytes, as safetensors defines the size: [2^62 - 1, 4, 0] of F32 is a valid empty
    // tensor even though (2^62 - 1) * 4 * 4 bytes would overflow on the way.
    uint64_t elements = 1;
    for (int64_t dim : entry.shape) {
      require(dim >= 0, "non-negative dimensions");
      require(!__builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements),
              "no overflow in the element count");
    }
    uint64_t bytes = 0;
    require(!__builtin_mul_overflow(elements, uint64_t(berth::io::dtype_size(entry.dtype)), &bytes),
            "no overflow in elements x size");
    require(entry.end - entry.begin == bytes, "span equals shape x dtype size");
    covered = entry.end;
  }
  require(covered == buffer, "spans cover the whole buffer");

  // What berth reads, berth writes back: the same entries and metadata, parsed again.
  if (header.data_offset > berth::io::kSafetensorsMaxHeaderSize - 64) return;
  std::string image = berth::io::serialize_safetensors_header(header.entries, header.metadata);
  image.append(reinterpret_cast<const char*>(data) + header.data_offset, buffer);
  const auto again = berth::io::parse_safetensors_header(reinterpret_cast<const uint8_t*>(image.data()),
                                                         image.size(), "round trip");
  require(again.metadata == header.metadata, "metadata survives a round trip");
  require(again.entries.size() == header.entries.size(), "entries survive a round trip");
  for (size_t i = 0; i < again.entries.size(); ++i) {
    const auto& a = again.entries[i];
    const auto& b = header.entries[i];
    require(
        a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.begin == b.begin && a.end == b.end,
        "entry survives a round trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  berth::io::SafetensorsHeader header;
  try {
    header = berth::io::parse_safetensors_header(data, size, "fuzz input");
  } catch (const berth::Error&) {
    return 0;  // refused with a message: what hostile input should get
  }
  check(header, data, size);
  return 0;
}
