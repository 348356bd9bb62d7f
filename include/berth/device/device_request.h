// DeviceRequest: a device as the user wrote it ("auto", "cpu", "cuda", "cuda:N", "meta"), parsed without
// torch, so that TrainingArguments' checks (and their fuzzer) need no libtorch.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace berth {

// A device as the user wrote it, before it is checked against the machine.
struct DeviceRequest {
  enum class Kind { Auto, Cpu, Cuda, Meta };
  Kind kind = Kind::Auto;
  std::optional<int> index;  // only for Kind::Cuda ("cuda:1" -> 1; "cuda" -> none)
  std::string text;          // the original spelling, for messages

  bool operator==(const DeviceRequest& other) const { return kind == other.kind && index == other.index; }
};

// Parses "auto", "cpu", "cuda", "cuda:N", "meta" (case-insensitive, surrounding spaces ignored).
// Anything else throws berth::Error listing the accepted forms.
DeviceRequest parse_device(std::string_view text);

}  // namespace berth
