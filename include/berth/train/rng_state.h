// The random generators' states (torch's CPU generator, each CUDA device's), captured and restored so that a
// resumed run draws the same dropout masks and shuffles as an uninterrupted one; saved as
// rng_state.safetensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace berth::train {

// Bytes as torch's Generator::get_state() returns them (torch.get_rng_state() in Python).
struct RngState {
  std::vector<uint8_t> cpu;  // the default CPU generator
  std::vector<std::vector<uint8_t>>
      cuda;  // the default generator of cuda:0, cuda:1, ... (empty without CUDA)
};

// The current states of torch's default CPU generator and, when CUDA is available, of every device's default
// generator.
RngState capture_rng_state();

// Sets the generators back to `state`. The CPU state must come from this libtorch's generator (berth::Error
// otherwise). CUDA states are restored for the devices both the state and this machine have; when they differ
// (a GPU run resumed on CPU, fewer GPUs) the others are left as they are and, if `note` is given, it is set
// to a sentence saying so (empty when everything was restored): the run goes on, no longer bit-exact.
void restore_rng_state(const RngState& state, std::string* note = nullptr);

// A safetensors file with uint8 tensors "cpu", "cuda.0", "cuda.1", ... Written atomically.
void save_rng_state(const RngState& state, const std::string& path);
// Throws berth::Error naming the path for a missing or invalid file, or one that is not an RNG state file.
RngState load_rng_state(const std::string& path);

}  // namespace berth::train
