// Precision selection for a device, the autocast guard, and compat's autocast switches.
#include "berth/train/mixed_precision.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <map>
#include <mutex>
#include <utility>

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "berth/train/loss_scaler.h"

namespace berth {
namespace compat {
namespace {

void check_autocast_device(c10::DeviceType device_type) {
  BERTH_CHECK(device_type == c10::DeviceType::CPU || device_type == c10::DeviceType::CUDA,
              "autocast in berth runs on cpu or cuda, found device type ", c10::DeviceTypeName(device_type),
              ". Fix: train on cpu or cuda, or in fp32");
}

}  // namespace

bool autocast_enabled(c10::DeviceType device_type) {
  check_autocast_device(device_type);
  return at::autocast::is_autocast_enabled(device_type);
}

void set_autocast_enabled(c10::DeviceType device_type, bool enabled) {
  check_autocast_device(device_type);
  at::autocast::set_autocast_enabled(device_type, enabled);
}

c10::ScalarType autocast_dtype(c10::DeviceType device_type) {
  check_autocast_device(device_type);
  return at::autocast::get_autocast_dtype(device_type);
}

void set_autocast_dtype(c10::DeviceType device_type, c10::ScalarType dtype) {
  check_autocast_device(device_type);
  at::autocast::set_autocast_dtype(device_type, dtype);
}

}  // namespace compat

namespace train {

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
  }
  BERTH_BUG(false, "unknown Precision ", static_cast<int>(precision));
  return "";
}

Precision parse_precision(std::string_view name) {
  if (name == "fp32" || name == "no") return Precision::fp32;
  if (name == "fp16") return Precision::fp16;
  if (name == "bf16") return Precision::bf16;
  BERTH_FAIL("unknown precision \"", name, "\": berth trains in fp32, fp16 or bf16. Fix: pass one of those");
}

c10::ScalarType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return c10::ScalarType::Float;
    case Precision::fp16:
      return c10::ScalarType::Half;
    case Precision::bf16:
      return c10::ScalarType::BFloat16;
  }
  BERTH_BUG(false, "unknown Precision ", static_cast<int>(precision));
  return c10::ScalarType::Float;
}

namespace {

// A float32 matmul inside an autocast region comes out in `dtype` exactly when this libtorch autocasts to it
// (a CPU autocast may refuse a dtype).
bool probe_cpu_autocast(c10::ScalarType dtype) {
  const bool was_enabled = compat::autocast_enabled(c10::DeviceType::CPU);
  const c10::ScalarType was_dtype = compat::autocast_dtype(c10::DeviceType::CPU);
  try {
    compat::set_autocast_dtype(c10::DeviceType::CPU, dtype);
  } catch (const std::exception&) {
    return false;
  }
  compat::set_autocast_enabled(c10::DeviceType::CPU, true);
  at::autocast::increment_nesting();
  bool cast = false;
  try {
    const at::Tensor a = at::ones({2, 2});
    cast = at::matmul(a, a).scalar_type() == dtype;
  } catch (const std::exception&) {
    cast = false;  // an autocast that takes the dtype but has no kernel for it: not available either
  }
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(c10::DeviceType::CPU, was_enabled);
  compat::set_autocast_dtype(c10::DeviceType::CPU, was_dtype);
  return cast;
}

}  // namespace

bool autocast_available(c10::DeviceType device_type, c10::ScalarType dtype) {
  if (device_type == c10::DeviceType::CUDA) return at::hasCUDA();
  if (device_type != c10::DeviceType::CPU) return false;
  static std::mutex mutex;
  static std::map<c10::ScalarType, bool> probed;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = probed.find(dtype);
  if (it == probed.end()) it = probed.emplace(dtype, probe_cpu_autocast(dtype)).first;
  return it->second;
}

PrecisionOptions resolve_precision(bool fp16, bool bf16, const c10::Device& device,
                                   LossScaleOptions loss_scale) {
  BERTH_CHECK(
      !(fp16 && bf16),
      "--fp16 and --bf16 are both set, but a run trains in one precision (HF: at most one of fp16 and "
      "bf16 can be True). Fix: keep one of them; with a DeepSpeed config, enable only one of its "
      "\"fp16\" and \"bf16\" blocks");
  PrecisionOptions options;
  if (fp16) {
    BERTH_CHECK(
        device.is_cuda(), "fp16 mixed precision requires a GPU, but this run's device is ", device.str(),
        " (fp16 autocast and loss scaling run on CUDA only, as in HF). Fix: pass --bf16 instead (bf16 "
        "autocast runs on the CPU, without loss scaling) or drop --fp16 to train in fp32; with a "
        "DeepSpeed config, set \"fp16\": {\"enabled\": false} or \"bf16\": {\"enabled\": true}");
    BERTH_CHECK(
        autocast_available(device.type(), c10::ScalarType::Half),
        "fp16 mixed precision requires a GPU, and this run's device is ", device.str(),
        " but this libtorch sees no CUDA device. Fix: check nvidia-smi and CUDA_VISIBLE_DEVICES, or pass "
        "--bf16 or fp32 (DeepSpeed config: \"fp16\": {\"enabled\": false})");
    LossScaler check(loss_scale);  // the fp16 block's mistakes surface before the model is built
    options.precision = Precision::fp16;
    options.loss_scale = loss_scale;
    return options;
  }
  if (bf16) {
    BERTH_CHECK(device.is_cpu() || device.is_cuda(),
                "bf16 mixed precision in berth runs on cpu or cuda, found ", device.str(),
                ". Fix: train on cpu or cuda, or drop --bf16 to train in fp32");
    BERTH_CHECK(autocast_available(device.type(), c10::ScalarType::BFloat16),
                "bf16 mixed precision needs autocast to bfloat16 on ", device.str(),
                ", which this libtorch (", TORCH_VERSION,
                ") does not provide. Fix: drop --bf16 to train in "
                "fp32 (DeepSpeed config: \"bf16\": {\"enabled\": false}), or build berth on the pinned torch "
                "(scripts/setup)",
                device.is_cuda() ? " built with CUDA" : "");
    options.precision = Precision::bf16;
  }
  return options;
}

AutocastGuard::AutocastGuard(Precision precision, c10::DeviceType device_type) : device_type_(device_type) {
  if (precision == Precision::fp32) return;
  BERTH_CHECK(device_type == c10::DeviceType::CPU || device_type == c10::DeviceType::CUDA,
              to_string(precision), " autocast runs on cpu or cuda, found device type ",
              c10::DeviceTypeName(device_type), ". Fix: train on cpu or cuda, or in fp32");
  BERTH_CHECK(!(precision == Precision::fp16 && device_type == c10::DeviceType::CPU),
              "fp16 mixed precision requires a GPU; the CPU autocasts to bf16 only. Fix: use bf16 on the CPU "
              "(--bf16) or train in fp32");
  previous_enabled_ = compat::autocast_enabled(device_type_);
  previous_dtype_ = compat::autocast_dtype(device_type_);
  compat::set_autocast_dtype(device_type_, compute_dtype(precision));
  compat::set_autocast_enabled(device_type_, true);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // torch.autocast.__exit__: the outermost region drops the casted copies of the weights.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(device_type_, previous_enabled_);
  compat::set_autocast_dtype(device_type_, previous_dtype_);
}

}  // namespace train
}  // namespace berth
