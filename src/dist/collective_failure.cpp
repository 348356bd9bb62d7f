// CollectiveFailure: c10d's error text classified (timeout, lost peer) and worded with the heartbeat's
// diagnosis and the fix.
#include "dist/collective_failure.h"

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

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
    kind = "timed out after " + seconds_text(ctx.times.timeout);
  } else if (peer_lost) {
    kind = "failed: a peer was lost (its connection closed)";
  } else {
    kind = "failed";
  }
  BERTH_FAIL(
      ctx.what, " ", kind, " on rank ", ctx.rank, " of ", ctx.world, " (", ctx.backend, "). ",
      diagnosis.empty() ? "" : diagnosis + " ", "c10d said: ", original,
      ". Fix: another rank probably died or is stuck: check its log; raise BERTH_DIST_TIMEOUT (seconds, now ",
      seconds_text(ctx.times.timeout), ") if a step is legitimately slow.");
}

}  // namespace

CollectiveFailure::CollectiveFailure(FailureContext ctx, c10::intrusive_ptr<c10d::Store> store)
    : ctx_(std::move(ctx)) {
  if (ctx_.world > 1)
    heartbeat_ = std::make_unique<Heartbeat>(std::move(store), ctx_.rank, ctx_.world, ctx_.who);
}

void CollectiveFailure::wait(c10d::Work& work, const std::string& what) const {
  // How often a waiting rank looks at the heartbeats: a small fraction of any sensible heartbeat timeout.
  constexpr std::chrono::milliseconds kPoll{500};
  try {
    if (!heartbeat_ || ctx_.backend != "gloo") {
      work.wait();  // NCCL's wait is the stream's; its own watchdog times it out
      return;
    }
    for (;;) {
      try {
        work.wait(kPoll);
        return;
      } catch (const std::exception&) {
        if (work.isCompleted()) throw;  // the collective's own failure, not the poll's "timed out"
      }
      // The store first: while it does not answer, every peer's heartbeat looks still.
      if (heartbeat_->store_silence() >= ctx_.times.heartbeat) fail_store_silent(what);
      const std::vector<int> frozen = heartbeat_->frozen(ctx_.times.heartbeat);
      if (!frozen.empty()) fail_unresponsive(what, frozen);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void CollectiveFailure::fail_unresponsive(const std::string& what, const std::vector<int>& ranks) const {
  abandoned_ = true;
  const bool one = ranks.size() == 1;
  std::string who;
  for (int r : ranks) who += (who.empty() ? "" : ", ") + heartbeat_->describe(r);
  BERTH_FAIL(what, " failed on rank ", ctx_.rank, " of ", ctx_.world, " (", ctx_.backend, "): ", who,
             one ? " is" : " are", " unresponsive: its heartbeat has not moved for ",
             seconds_text(ctx_.times.heartbeat),
             " while this rank waited (the process is alive but not running: stopped with SIGSTOP or Ctrl-Z, "
             "held by a debugger, its machine is paused, or the network to it is cut). Fix: resume it (kill "
             "-CONT PID on its host) or end it, then restart the job (--resume_from_checkpoint latest); "
             "BERTH_HEARTBEAT_TIMEOUT (seconds, now ",
             seconds_text(ctx_.times.heartbeat), ") sets how long a silent rank is waited for.");
}

void CollectiveFailure::fail_store_silent(const std::string& what) const {
  abandoned_ = true;
  BERTH_FAIL(what, " failed on rank ", ctx_.rank, " of ", ctx_.world, " (", ctx_.backend,
             "): the rendezvous store, hosted by ", heartbeat_->describe(0), ", has not answered for ",
             seconds_text(ctx_.times.heartbeat),
             " while this rank waited: rank 0 is unresponsive (stopped with SIGSTOP or Ctrl-Z, held by a "
             "debugger, its machine paused, or the network to it cut). Fix: resume it (kill -CONT PID on its "
             "host) or end it, check the network to its host, then restart the job (--resume_from_checkpoint "
             "latest); BERTH_HEARTBEAT_TIMEOUT (seconds, now ",
             seconds_text(ctx_.times.heartbeat), ") sets how long a silent store is waited for.");
}

void CollectiveFailure::fail(const std::string& what, const std::exception& e) const {
  FailureContext c = ctx_;
  c.what = what;
  throw_collective_failure(c, message_of(e), ctx_.world > 1 && heartbeat_ ? heartbeat_->diagnose() : "");
}

}  // namespace berth::dist
