// The safetensors header, torch-free: parsing and validating a whole file image, and laying out a new one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::io {

// The safetensors dtypes berth reads and writes. The spec's others (U16, U32, U64, C64, F8_*, F6_*, F4) are
// refused with a "not supported" error naming the tensor.
enum class SafetensorsDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

// The header's 100 MB cap, as the reference implementation (huggingface/safetensors) enforces it.
inline constexpr uint64_t kSafetensorsMaxHeaderSize = 100'000'000;

size_t dtype_size(SafetensorsDtype dtype);            // bytes per element
std::string_view dtype_name(SafetensorsDtype dtype);  // as the header spells it: "F32", "BOOL", ...
std::optional<SafetensorsDtype> parse_dtype(std::string_view name);

// One tensor's header entry. begin/end are byte offsets into the data buffer that follows the header.
struct SafetensorsEntry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // by data offset, as they lie in the buffer
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // where the data buffer starts in the file: 8 + header length
};

// Parses and validates a whole file image of `size` bytes; reads nothing outside it. Accepts exactly what the
// reference reader accepts (spans tile the buffer with no gap, overlap or trailing byte; the header starts
// with '{' as the spec demands) and refuses duplicate keys, which the spec forbids but serde silently
// collapses. Throws berth::Error naming `source` (the file), the tensor and the numbers.
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, std::string_view source);

// The bytes that precede the data for these entries: the 8-byte length and the JSON header padded with spaces
// to a multiple of 8, laid out as the reference serializer does ("__metadata__" first when non-empty, then
// the entries in the given order, compact JSON, strings escaped as serde_json escapes them). The caller
// orders the entries (safetensors_layout_order) and sets contiguous offsets.
std::string serialize_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                         const std::map<std::string, std::string>& metadata);

// The reference serializer's order: by dtype descending in its enum order (I64, F64, F32, I32, BF16, F16,
// I16, I8, U8, BOOL, i.e. larger alignment first), then by name bytewise. Returns the sorted positions.
std::vector<size_t> safetensors_layout_order(const std::vector<SafetensorsEntry>& entries);

}  // namespace berth::io
