// Who this process is in a distributed run: detected from torchrun, OpenMPI, Slurm (srun) or MPICH/PMI
// variables.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

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
  // The rendezvous address: MASTER_ADDR/MASTER_PORT when given; else, under mpirun on one node, 127.0.0.1 and
  // 29500; under srun, the first host of the step's node list and a port derived from SLURM_JOB_ID.
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  std::string master_from;  // where they came from, for doctor: "MASTER_ADDR, MASTER_PORT", ...

  bool distributed() const { return world_size > 1; }
};

// Reads one environment variable; absent -> nullopt. Tests pass a table instead of the real environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment as an EnvLookup.
EnvLookup process_env();

// Slurm's compressed host list, expanded in order: "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5,
// "a-[1-2]-b" -> a-1-b a-2-b, "r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2 (zero padding as written). Throws
// berth::Error naming the list and the fault for unbalanced brackets, non-numeric or descending ranges.
std::vector<std::string> expand_slurm_hostlist(const std::string& list);

// Slurm's default rendezvous port for a job: 10000 + job_id % 20000, so concurrent jobs on shared nodes
// differ.
int slurm_master_port(long long job_id);

// Detects the launcher's variables. Sources that are present must agree with each
// other, values must be integers in range (rank < world size, local rank < local
// world size) and partial sets (LOCAL_RANK without WORLD_SIZE) are refused; every
// problem throws berth::Error naming the variables, their values and the fix.
// No launcher variables at all -> a single process (rank 0 of 1, source None). Under mpirun across several
// nodes without MASTER_ADDR it throws: nothing tells the ranks where rank 0 is.
DistEnv detect_dist_env(const EnvLookup& env = process_env());

}  // namespace berth
