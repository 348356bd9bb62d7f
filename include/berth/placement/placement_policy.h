// PlacementPolicy: move the model to its device, or only check that it is there; parsed without torch, so
// that TrainingArguments' checks (and their fuzzer) need no libtorch.
#pragma once

#include <string_view>

namespace berth {

enum class PlacementPolicy {
  Move,    // move whatever is elsewhere to the target device
  Strict,  // move nothing; anything elsewhere is a PlacementError
};

// "move" or "strict" (case-insensitive, surrounding spaces ignored); anything else throws berth::Error.
PlacementPolicy parse_placement_policy(std::string_view text);
std::string_view to_string(PlacementPolicy policy);

}  // namespace berth
