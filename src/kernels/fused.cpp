// The process-wide switch for berth's fused CPU kernels (BERTH_FUSED_KERNELS).
#include "berth/kernels/fused.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace berth::kernels {
namespace {

std::atomic<bool>& switch_state() {
  static std::atomic<bool> enabled{[] {
    const char* value = std::getenv("BERTH_FUSED_KERNELS");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }()};
  return enabled;
}

}  // namespace

bool fused_enabled() { return switch_state().load(std::memory_order_relaxed); }

void set_fused_enabled(bool enabled) { switch_state().store(enabled, std::memory_order_relaxed); }

bool use_fused(const at::Tensor& x) {
  return fused_enabled() && x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat;
}

}  // namespace berth::kernels
