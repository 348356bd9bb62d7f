// CollectiveFailure: c10d's error text classified (timeout, lost peer) and worded with the heartbeat's
// diagnosis and the fix.
#include "dist/collective_failure.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <utility>

#include "berth/core/error.h"
#include "core/text.h"
#include "dist/comm_text.h"

namespace berth::dist {
namespace {

// `diagnosis`: the heartbeat's sentence naming the rank to blame, or "".
[[noreturn]] void throw_collective_failure(const FailureContext& ctx, const std::string& original,
                                           const std::string& diagnosis) {
  const std::string lower = text::to_lower(original);
  const bool timed_out = lower.find("timeout") != std::string::npos ||
                         lower.find("timed out") != std::string::npos ||
                         lower.find("deadline") != std::string::npos;
  const bool peer_lost = lower.find("connection closed") != std::string::npos ||
                         lower.find("connection reset") != std::string::npos ||
                         lower.find("broken pipe") != std::string::npos ||
                         lower.find("connection refused") != std::string::npos ||
                         lower.find("closed by peer") != std::string::npos;
  std::string kind;
  if (timed_out) {
    kind = "timed out after " + seconds_text(ctx.timeout);
  } else if (peer_lost) {
    kind = "failed: a peer was lost (its connection closed)";
  } else {
    kind = "failed";
  }
  BERTH_FAIL(
      ctx.what, " ", kind, " on rank ", ctx.rank, " of ", ctx.world, " (", ctx.backend, "). ",
      diagnosis.empty() ? "" : diagnosis + " ", "c10d said: ", original,
      ". Fix: another rank probably died or is stuck: check its log; raise BERTH_DIST_TIMEOUT (seconds, now ",
      seconds_text(ctx.timeout), ") if a step is legitimately slow.");
}

}  // namespace

CollectiveFailure::CollectiveFailure(FailureContext ctx, c10::intrusive_ptr<c10d::Store> store)
    : ctx_(std::move(ctx)) {
  if (ctx_.world > 1) heartbeat_ = std::make_unique<Heartbeat>(std::move(store), ctx_.rank, ctx_.world);
}

void CollectiveFailure::fail(const std::string& what, const std::exception& e) const {
  FailureContext c = ctx_;
  c.what = what;
  throw_collective_failure(c, message_of(e), ctx_.world > 1 && heartbeat_ ? heartbeat_->diagnose() : "");
}

}  // namespace berth::dist
