// Parsing and naming placement policies, torch-free.
#include "berth/placement/placement_policy.h"

#include "berth/core/error.h"
#include "core/text.h"

namespace berth {

PlacementPolicy parse_placement_policy(std::string_view text) {
  const std::string value = text::to_lower(text::trim(text));
  if (value == "move") return PlacementPolicy::Move;
  if (value == "strict") return PlacementPolicy::Strict;
  BERTH_FAIL(
      "placement policy must be \"move\" (berth moves the model to its device) or \"strict\" "
      "(berth only checks that it is already there), found \"",
      text, "\". Fix: set placement=move or placement=strict");
}

std::string_view to_string(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::Move:
      return "move";
    case PlacementPolicy::Strict:
      return "strict";
  }
  BERTH_BUG(false, "unknown PlacementPolicy ", static_cast<int>(policy));
}

}  // namespace berth
