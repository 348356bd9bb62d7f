// HF's fsdp option string mapped onto the ZeRO options berth's sharded gradient sync implements.
#include "berth/dist/zero_options.h"

#include <sstream>
#include <vector>

#include "berth/core/error.h"
#include "core/text.h"

namespace berth::dist {

ZeroOptions zero_options_from_fsdp(const std::string& fsdp) {
  ZeroOptions zero;
  std::istringstream in(fsdp);
  std::string option;
  std::vector<std::string> strategies;
  bool offload = false;
  while (in >> option) {
    const std::string name = text::to_lower(option);
    if (name == "full_shard" || name == "shard_grad_op" || name == "no_shard") {
      strategies.push_back(name);
      zero.stage = name == "full_shard" ? 3 : name == "shard_grad_op" ? 2 : 0;
    } else if (name == "offload") {
      offload = true;
    } else if (name == "auto_wrap") {
      // berth's ZeRO-3 already gathers parameters one layer at a time: the wrap is implied.
    } else if (name == "hybrid_shard" || name == "hybrid_shard_zero2") {
      BERTH_FAIL("fsdp option '", option,
                 "' (sharding within a node, replicating across nodes) is not supported by berth. Fix: "
                 "--fsdp \"full_shard\" or \"shard_grad_op\"");
    } else {
      BERTH_FAIL(
          "unknown fsdp option '", option,
          "': berth takes full_shard, shard_grad_op, no_shard, offload and auto_wrap (HF's names). Fix: e.g. "
          "--fsdp \"full_shard offload\"");
    }
  }
  BERTH_CHECK(strategies.size() <= 1, "fsdp names ", strategies.size(), " sharding strategies (",
              text::join(strategies, ", "), "); a run uses one. Fix: keep one of them");
  if (offload) {
    BERTH_CHECK(zero.stage >= 2,
                "fsdp option 'offload' can't work on its own: it needs full_shard or "
                "shard_grad_op (as in HF). Fix: --fsdp \"full_shard offload\"");
    zero.offload_optimizer.device = "cpu";
    if (zero.stage == 3) zero.offload_param.device = "cpu";
  }
  return zero;
}

}  // namespace berth::dist
