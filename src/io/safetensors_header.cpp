// Parsing, validating and laying out safetensors headers; torch-free so that the fuzzer links it alone.
#include "berth/io/safetensors_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "berth/core/error.h"
#include "core/utf8_check.h"

namespace berth::io {
namespace {

using json = nlohmann::json;

constexpr const char* kCorrupt = ". Fix: the file is corrupt or was written by a faulty writer; re-save it";

struct DtypeInfo {
  SafetensorsDtype dtype;
  std::string_view name;
  size_t size;
};

// In the reference implementation's enum order, largest alignment last: the writer sorts by it descending.
constexpr std::array<DtypeInfo, 10> kDtypes = {{
    {SafetensorsDtype::BOOL, "BOOL", 1},
    {SafetensorsDtype::U8, "U8", 1},
    {SafetensorsDtype::I8, "I8", 1},
    {SafetensorsDtype::I16, "I16", 2},
    {SafetensorsDtype::F16, "F16", 2},
    {SafetensorsDtype::BF16, "BF16", 2},
    {SafetensorsDtype::I32, "I32", 4},
    {SafetensorsDtype::F32, "F32", 4},
    {SafetensorsDtype::F64, "F64", 8},
    {SafetensorsDtype::I64, "I64", 8},
}};

// Dtypes of the spec that berth has no use for: named so that the error says "not supported" rather than
// "unknown".
constexpr std::array<std::string_view, 12> kUnsupportedDtypes = {
    "U16",     "U32",         "U64",         "C64",     "F8_E5M2", "F8_E4M3",
    "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F6_E2M3", "F6_E3M2", "F4"};

const DtypeInfo& info_of(SafetensorsDtype dtype) {
  for (const DtypeInfo& info : kDtypes)
    if (info.dtype == dtype) return info;
  throw InternalError("berth internal error: safetensors dtype without an entry in kDtypes");
}

size_t enum_rank(SafetensorsDtype dtype) {
  for (size_t i = 0; i < kDtypes.size(); ++i)
    if (kDtypes[i].dtype == dtype) return i;
  return 0;
}

std::string supported_list() {
  std::string out;
  for (auto it = kDtypes.rbegin(); it != kDtypes.rend(); ++it)
    out += (out.empty() ? "" : ", ") + std::string(it->name);
  return out;
}

// A tensor name or JSON excerpt fit for one line of an error message: hostile files can hold megabytes.
std::string excerpt(std::string_view text, size_t limit = 60) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit)) + "...";
}

std::string describe(const json& value) {
  if (value.is_discarded()) return "nothing";
  return std::string(value.type_name()) + " " + excerpt(value.dump());
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Thrown from the parse callback to stop at the first duplicate key or too deep a nesting.
struct StructureError {
  std::string message;
};

// Keys seen per open object, innermost last. nlohmann keeps the last of two equal keys without a word; the
// spec forbids them, and an attacker could hide a second "data_offsets" from a reader that keeps the first.
class DuplicateKeyCheck {
 public:
  bool operator()(int depth, json::parse_event_t event, json& parsed) {
    // Valid headers nest three deep: root object, tensor object, shape array.
    constexpr int kMaxDepth = 2;
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth > kMaxDepth)
          throw StructureError{"JSON nests deeper than a safetensors header does (object > tensor > shape)"};
        if (event == json::parse_event_t::object_start) open_.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_.empty()) open_.pop_back();
        break;
      case json::parse_event_t::key: {
        if (open_.empty()) break;
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!open_.back().insert(key).second) {
          std::string where = open_.size() == 1 ? "at the top level" : "inside '" + excerpt(parent_) + "'";
          throw StructureError{"key '" + excerpt(key) + "' appears twice " + where +
                               " (duplicate keys are forbidden by the spec)"};
        }
        if (open_.size() == 1) parent_ = key;
        break;
      }
      default:
        break;
    }
    return true;
  }

 private:
  std::vector<std::set<std::string>> open_;
  std::string parent_;  // the top-level key whose object is being read
};

class HeaderParser {
 public:
  HeaderParser(const uint8_t* data, size_t size, std::string_view source)
      : data_(data), size_(size), source_(source) {}

  SafetensorsHeader parse() {
    BERTH_CHECK(size_ >= 8, source_, ": the file is ", size_,
                " bytes, too short for the 8-byte header length that starts every safetensors file. Fix: "
                "check that this is a complete safetensors file");
    uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | data_[i];
    BERTH_CHECK(header_length <= kSafetensorsMaxHeaderSize, source_, ": the header length is ", header_length,
                " bytes, over safetensors' limit of ", kSafetensorsMaxHeaderSize,
                " bytes. Fix: the file is corrupt or not safetensors; re-save it");
    BERTH_CHECK(header_length <= size_ - 8, source_, ": the header length is ", header_length,
                " bytes but only ", size_ - 8,
                " bytes follow the length field. Fix: the file is truncated or not safetensors; copy or "
                "re-save it");
    BERTH_CHECK(header_length > 0 && data_[8] == '{', source_, ": the header must start with '{', found ",
                header_length == 0 ? std::string("an empty header") : byte_text(data_[8]),
                ". Fix: the file is corrupt or not safetensors");

    // nlohmann reads a NUL byte as the end of its input: "{}\0<anything>" would pass for "{}". JSON has no
    // raw NUL anywhere (strings escape it), so one in the header is refused outright.
    const void* nul = std::memchr(data_ + 8, 0, header_length);
    BERTH_CHECK(nul == nullptr, source_, ": the header holds a NUL byte at offset ",
                static_cast<const uint8_t*>(nul) - (data_ + 8),
                ", which JSON does not allow. Fix: the file is corrupt or not safetensors; re-save it");

    SafetensorsHeader header;
    header.data_offset = 8 + header_length;
    buffer_size_ = size_ - header.data_offset;
    const json root = parse_json(data_ + 8, data_ + header.data_offset);
    BERTH_CHECK(root.is_object(), source_, ": the header must be a JSON object, found ", describe(root),
                kCorrupt);

    for (const auto& [key, value] : root.items()) {
      if (key == "__metadata__") {
        header.metadata = parse_metadata(value);
      } else {
        header.entries.push_back(parse_entry(key, value));
      }
    }
    check_tiling(header.entries);
    return header;
  }

 private:
  static std::string byte_text(uint8_t byte) {
    std::ostringstream out;
    out << "byte 0x" << std::hex << static_cast<int>(byte);
    if (byte >= 0x20 && byte < 0x7f) out << " ('" << static_cast<char>(byte) << "')";
    return out.str();
  }

  json parse_json(const uint8_t* begin, const uint8_t* end) const {
    try {
      return json::parse(reinterpret_cast<const char*>(begin), reinterpret_cast<const char*>(end),
                         DuplicateKeyCheck{},
                         /*allow_exceptions=*/true);
    } catch (const StructureError& e) {
      BERTH_FAIL(source_, ": the header is not a valid safetensors header: ", e.message,
                 ". Fix: the file is corrupt; re-save it");
    } catch (const json::exception& e) {
      BERTH_FAIL(source_, ": the header is not valid JSON (", e.what(),
                 "). Fix: the file is corrupt or not safetensors; re-save it");
    }
  }

  std::map<std::string, std::string> parse_metadata(const json& value) const {
    std::map<std::string, std::string> metadata;
    if (value.is_null()) return metadata;  // serde reads null as "no metadata"
    BERTH_CHECK(value.is_object(), source_,
                ": \"__metadata__\" must be an object of strings to strings, found ", describe(value),
                kCorrupt);
    for (const auto& [key, text] : value.items()) {
      BERTH_CHECK(text.is_string(), source_, ": \"__metadata__\" value of '", excerpt(key),
                  "' must be a string (metadata maps strings to strings), found ", describe(text), kCorrupt);
      metadata.emplace(key, text.get<std::string>());
    }
    return metadata;
  }

  SafetensorsEntry parse_entry(const std::string& name, const json& value) const {
    const std::string where = source_ + ": tensor '" + excerpt(name) + "'";
    BERTH_CHECK(value.is_object(), where,
                ": the entry must be an object {\"dtype\", \"shape\", \"data_offsets\"}, found ",
                describe(value), kCorrupt);
    SafetensorsEntry entry;
    entry.name = name;

    const json& dtype = field(value, "dtype", where);
    BERTH_CHECK(dtype.is_string(), where, ": \"dtype\" must be a string such as \"F32\", found ",
                describe(dtype), kCorrupt);
    const std::string& dtype_text = dtype.get_ref<const std::string&>();
    const std::optional<SafetensorsDtype> parsed = parse_dtype(dtype_text);
    if (!parsed) {
      const bool known = std::find(kUnsupportedDtypes.begin(), kUnsupportedDtypes.end(), dtype_text) !=
                         kUnsupportedDtypes.end();
      BERTH_FAIL(where, ": dtype ", excerpt(dtype_text), known ? " is not supported by berth" : " is unknown",
                 "; berth reads ", supported_list(),
                 ". Fix: convert the tensor to one of these (e.g. in Python: ",
                 "t.to(torch.float32)) and re-save the file");
    }
    entry.dtype = *parsed;

    const json& shape = field(value, "shape", where);
    BERTH_CHECK(shape.is_array(), where, ": \"shape\" must be an array of non-negative integers, found ",
                describe(shape), kCorrupt);
    // As the reference reader: an overflow at any step is refused, even if a later dimension is 0.
    uint64_t elements = 1;
    bool overflow = false;
    for (const json& dim : shape) {
      BERTH_CHECK(
          dim.is_number_unsigned() && dim.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
          where, ": \"shape\" must hold non-negative integers below 2^63, found ", describe(dim), " in ",
          excerpt(shape.dump()), kCorrupt);
      const uint64_t size = dim.get<uint64_t>();
      entry.shape.push_back(static_cast<int64_t>(size));
      if (!overflow) overflow = __builtin_mul_overflow(elements, size, &elements);
    }
    uint64_t bytes = 0;
    if (!overflow) overflow = __builtin_mul_overflow(elements, uint64_t(dtype_size(entry.dtype)), &bytes);
    BERTH_CHECK(!overflow, where, ": shape ", excerpt(shape_text(entry.shape)), " of ",
                dtype_name(entry.dtype), " has more bytes than 2^64. Fix: the file is corrupt; re-save it");

    const json& offsets = field(value, "data_offsets", where);
    BERTH_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                    offsets[1].is_number_unsigned(),
                where, ": \"data_offsets\" must be [begin, end], two non-negative integers, found ",
                describe(offsets), kCorrupt);
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    BERTH_CHECK(entry.begin <= entry.end, where, ": data_offsets [", entry.begin, ", ", entry.end,
                "] begin after they end. Fix: the file is corrupt; re-save it");
    BERTH_CHECK(entry.end <= buffer_size_, where, ": data_offsets [", entry.begin, ", ", entry.end,
                "] reach past the ", buffer_size_,
                "-byte data buffer. Fix: the file is truncated or corrupt; copy or re-save it");
    BERTH_CHECK(entry.end - entry.begin == bytes, where, ": shape ", shape_text(entry.shape), " of ",
                dtype_name(entry.dtype), " (", dtype_size(entry.dtype), " bytes each) needs ", bytes,
                " bytes but data_offsets [", entry.begin, ", ", entry.end, "] span ", entry.end - entry.begin,
                ". Fix: the file is corrupt; re-save it");
    return entry;
  }

  const json& field(const json& object, const char* key, const std::string& where) const {
    auto it = object.find(key);
    BERTH_CHECK(it != object.end(), where, ": the entry lacks \"", key,
                "\" (it needs \"dtype\", \"shape\" and ", "\"data_offsets\"), found ", describe(object),
                kCorrupt);
    return *it;
  }

  // As the reference reader: sorted by offsets, the spans must cover the buffer exactly, so that no byte is
  // read twice or hides a second payload.
  void check_tiling(std::vector<SafetensorsEntry>& entries) const {
    std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
      return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
    });
    uint64_t covered = 0;
    const SafetensorsEntry* previous = nullptr;
    for (const SafetensorsEntry& entry : entries) {
      const std::string where = source_ + ": tensor '" + excerpt(entry.name) + "'";
      BERTH_CHECK(entry.begin >= covered, where, ": data_offsets [", entry.begin, ", ", entry.end,
                  "] overlap tensor '", previous ? excerpt(previous->name) : "", "' [",
                  previous ? previous->begin : 0, ", ", covered, "]. Fix: the file is corrupt; re-save it");
      BERTH_CHECK(entry.begin == covered, where, ": data_offsets [", entry.begin, ", ", entry.end,
                  "] leave bytes [", covered, ", ", entry.begin,
                  "] of the data buffer to no tensor (safetensors forbids holes). Fix: the file is corrupt; "
                  "re-save it");
      covered = entry.end;
      previous = &entry;
    }
    BERTH_CHECK(
        covered == buffer_size_, source_, ": the data buffer is ", buffer_size_,
        " bytes but its tensors end at byte ", covered, ": bytes [", covered, ", ", buffer_size_,
        "] belong to no tensor (safetensors forbids trailing bytes). Fix: the file is corrupt; re-save it");
  }

  const uint8_t* data_;
  size_t size_;
  std::string source_;
  uint64_t buffer_size_ = 0;
};

// serde_json's escaping, which Python's json.dumps(ensure_ascii=False) shares: quote, backslash and control
// characters only; everything else, UTF-8 included, verbatim.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[static_cast<unsigned char>(c) >> 4];
          out += kHex[static_cast<unsigned char>(c) & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void check_utf8(std::string_view text, const char* what) {
  // JSON strings must be UTF-8; a name that is not would make a file other readers refuse.
  BERTH_CHECK(!text::first_invalid_utf8(text), "safetensors: ", what, " '", excerpt(text),
              "' is not valid UTF-8, which a JSON header cannot hold. Fix: use a UTF-8 name");
}

}  // namespace

size_t dtype_size(SafetensorsDtype dtype) { return info_of(dtype).size; }

std::string_view dtype_name(SafetensorsDtype dtype) { return info_of(dtype).name; }

std::optional<SafetensorsDtype> parse_dtype(std::string_view name) {
  for (const DtypeInfo& info : kDtypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, std::string_view source) {
  return HeaderParser(data, size, source).parse();
}

std::vector<size_t> safetensors_layout_order(const std::vector<SafetensorsEntry>& entries) {
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t rank_a = enum_rank(entries[a].dtype), rank_b = enum_rank(entries[b].dtype);
    if (rank_a != rank_b) return rank_a > rank_b;
    return entries[a].name < entries[b].name;
  });
  return order;
}

std::string serialize_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                         const std::map<std::string, std::string>& metadata) {
  std::string text = "{";
  if (!metadata.empty()) {
    text += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      check_utf8(key, "metadata key");
      check_utf8(value, "metadata value");
      if (!first) text += ',';
      first = false;
      append_json_string(text, key);
      text += ':';
      append_json_string(text, value);
    }
    text += '}';
  }
  for (const SafetensorsEntry& entry : entries) {
    check_utf8(entry.name, "tensor name");
    BERTH_CHECK(entry.name != "__metadata__",
                "safetensors: a tensor cannot be named \"__metadata__\": the header keeps that key for the "
                "metadata. Fix: rename the tensor");
    if (text.size() > 1) text += ',';
    append_json_string(text, entry.name);
    text += ":{\"dtype\":";
    append_json_string(text, dtype_name(entry.dtype));
    text += ",\"shape\":[";
    for (size_t i = 0; i < entry.shape.size(); ++i) text += (i ? "," : "") + std::to_string(entry.shape[i]);
    text += "],\"data_offsets\":[" + std::to_string(entry.begin) + "," + std::to_string(entry.end) + "]}";
  }
  text += '}';
  // Padding to 8 bytes keeps every tensor's data aligned for its dtype once the file is mapped.
  text.append((8 - text.size() % 8) % 8, ' ');
  BERTH_CHECK(text.size() <= kSafetensorsMaxHeaderSize, "safetensors: the header would be ", text.size(),
              " bytes, over the format's limit of ", kSafetensorsMaxHeaderSize,
              " bytes. Fix: save fewer tensors or shorter metadata per file");

  std::string out(8, '\0');
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return out + text;
}

}  // namespace berth::io
