// Capturing and restoring torch's generator states; their safetensors file.
#include "berth/train/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cstring>
#include <mutex>

#include "berth/core/error.h"
#include "berth/io/safetensors.h"

namespace berth::train {
namespace {

constexpr const char* kFormat = "berth-rng-state";

std::vector<uint8_t> to_bytes(const at::Tensor& state) {
  const at::Tensor bytes = state.to(at::kCPU).contiguous();
  BERTH_BUG(bytes.scalar_type() == at::kByte, "a generator state is uint8, found ", bytes.scalar_type());
  const auto* data = bytes.data_ptr<uint8_t>();
  return std::vector<uint8_t>(data, data + bytes.numel());
}

at::Tensor to_tensor(const std::vector<uint8_t>& bytes) {
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::TensorOptions().dtype(at::kByte));
  if (!bytes.empty()) std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensor;
}

// Generators are shared by every thread that draws; their own mutex guards get_state/set_state.
std::vector<uint8_t> state_of(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return to_bytes(generator.get_state());
}

void set_state_of(at::Generator generator, const std::vector<uint8_t>& bytes, const std::string& what) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  try {
    generator.set_state(to_tensor(bytes));
  } catch (const c10::Error& e) {
    BERTH_FAIL(
        "restoring the ", what, " random generator: expected a state saved by this libtorch (", TORCH_VERSION,
        "), found ", bytes.size(), " bytes it rejects (", e.what_without_backtrace(),
        "). Fix: resume with the libtorch that wrote the checkpoint, or delete rng_state.safetensors to "
        "resume without exact randomness");
  }
}

// Asked at run time, not fixed by BERTH_WITH_CUDA: a CPU-only berth may link a libtorch built with CUDA, and
// a CUDA build may run on a machine without a GPU. Compiles the same either way (no CUDA headers needed).
size_t cuda_devices() { return at::hasCUDA() ? torch::cuda::device_count() : 0; }

at::Generator cuda_generator(size_t index) {
  return at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
}

}  // namespace

RngState capture_rng_state() {
  RngState state;
  state.cpu = state_of(at::detail::getDefaultCPUGenerator());
  for (size_t i = 0; i < cuda_devices(); ++i) state.cuda.push_back(state_of(cuda_generator(i)));
  return state;
}

void restore_rng_state(const RngState& state, std::string* note) {
  BERTH_CHECK(
      !state.cpu.empty(),
      "restoring the random generators: expected a CPU generator state, found none. Fix: pass a state "
      "from capture_rng_state or load_rng_state");
  set_state_of(at::detail::getDefaultCPUGenerator(), state.cpu, "CPU");
  const size_t devices = cuda_devices();
  const size_t restored = std::min(devices, state.cuda.size());
  for (size_t i = 0; i < restored; ++i)
    set_state_of(cuda_generator(i), state.cuda[i], "cuda:" + std::to_string(i));
  if (note) {
    note->clear();
    if (state.cuda.size() != devices)
      *note =
          detail::concat("the saved random state has ", state.cuda.size(),
                         " CUDA generator(s), this machine ", devices, " CUDA device(s): restored ", restored,
                         "; the resumed run will not draw exactly what an uninterrupted one would");
  }
}

void save_rng_state(const RngState& state, const std::string& path) {
  std::map<std::string, at::Tensor> tensors{{"cpu", to_tensor(state.cpu)}};
  for (size_t i = 0; i < state.cuda.size(); ++i)
    tensors["cuda." + std::to_string(i)] = to_tensor(state.cuda[i]);
  io::save_safetensors(path, tensors, {{"format", kFormat}, {"torch_version", TORCH_VERSION}});
}

RngState load_rng_state(const std::string& path) {
  const auto file = io::SafetensorsFile::open(path);
  std::string names;
  for (const auto& name : file.names()) names += (names.empty() ? "" : ", ") + name;
  BERTH_CHECK(file.contains("cpu"), path,
              ": expected an RNG state file (uint8 tensors \"cpu\", \"cuda.0\", ...), found ",
              names.empty() ? std::string("no tensors") : "tensors " + names,
              ". Fix: pass the rng_state.safetensors of a checkpoint directory");
  RngState state;
  auto read = [&](const std::string& name) {
    BERTH_CHECK(file.dtype(name) == at::kByte && file.shape(name).size() == 1, path, ": expected \"", name,
                "\" to be a 1-D uint8 tensor, found ", file.dtype(name), " of ", file.shape(name).size(),
                " dimension(s). Fix: pass the rng_state.safetensors of a checkpoint directory");
    return to_bytes(file.tensor(name));
  };
  state.cpu = read("cpu");
  for (size_t i = 0; file.contains("cuda." + std::to_string(i)); ++i)
    state.cuda.push_back(read("cuda." + std::to_string(i)));
  return state;
}

}  // namespace berth::train
