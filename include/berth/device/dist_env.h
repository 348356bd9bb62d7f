// Who this process is in a distributed run: detected from torchrun, OpenMPI, Slurm (srun) or MPICH/PMI
// variables.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace berth {

enum class DistSource { None, Torchrun, OpenMPI, Slurm, PMI };

// "none", "torchrun", "openmpi", "slurm", "pmi".
std::string to_string(DistSource source);

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  DistSource source = DistSource::None;
  std::optional<std::string> master_addr;  // MASTER_ADDR, when given
  std::optional<int> master_port;          // MASTER_PORT, when given

  bool distributed() const { return world_size > 1; }
};

// Reads one environment variable; absent -> nullopt. Tests pass a table instead of the real environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment as an EnvLookup.
EnvLookup process_env();

// Detects the launcher's variables. Sources that are present must agree with each
// other, values must be integers in range (rank < world size, local rank < local
// world size) and partial sets (LOCAL_RANK without WORLD_SIZE) are refused; every
// problem throws berth::Error naming the variables, their values and the fix.
// No launcher variables at all -> a single process (rank 0 of 1, source None).
DistEnv detect_dist_env(const EnvLookup& env = process_env());

}  // namespace berth
