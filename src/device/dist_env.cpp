// Reads rank, world size and local rank from whichever launcher started this process, refusing
// contradictions.
#include "berth/device/dist_env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <vector>

#include "berth/core/error.h"
#include "core/text.h"

namespace berth {
namespace {

// One variable as the launcher set it; `name` is what messages show, so it may describe a derived value.
struct Field {
  std::string name;
  std::optional<std::string> value;
};

Field field(const EnvLookup& env, const std::string& name) { return Field{name, env(name)}; }

int read_int(const Field& f, int minimum) {
  const std::optional<int> value = text::parse_integer(*f.value);
  BERTH_CHECK(value.has_value(), f.name, "='", *f.value, "' is not an integer: ", f.name,
              " must be a whole number", minimum == 0 ? " (0, 1, ...)" : " (1, 2, ...)",
              ". Fix: correct or unset ", f.name, " (launchers set it themselves).");
  BERTH_CHECK(*value >= minimum, f.name, "=", *f.value, " is ", *value < 0 ? "negative" : "out of range",
              ": ", f.name, " must be at least ", minimum, ". Fix: correct or unset ", f.name,
              " (launchers set it themselves).");
  return static_cast<int>(*value);
}

std::string display_name(DistSource source) {
  switch (source) {
    case DistSource::None:
      return "no launcher";
    case DistSource::Torchrun:
      return "torchrun";
    case DistSource::OpenMPI:
      return "OpenMPI";
    case DistSource::Slurm:
      return "Slurm (srun)";
    case DistSource::PMI:
      return "MPICH/Intel MPI (PMI)";
  }
  return "?";
}

struct Reading {
  DistSource source = DistSource::None;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  bool local_explicit = false;  // false: defaulted to "one node", so another source may know better
  std::string vars;             // "RANK=1, WORLD_SIZE=2", for messages
};

std::string assignment(const Field& f) { return f.name + "=" + *f.value; }

// The checks every launcher shares: complete sets, integers, ranks inside their sizes.
std::optional<Reading> read_fields(DistSource source, const Field& rank_f, const Field& size_f,
                                   const Field& local_rank_f, const Field& local_size_f) {
  const std::vector<const Field*> all = {&rank_f, &size_f, &local_rank_f, &local_size_f};
  std::string set;
  for (const Field* f : all) {
    if (f->value) set += (set.empty() ? "" : ", ") + assignment(*f);
  }
  if (set.empty()) return std::nullopt;

  const std::string who = display_name(source);
  if (!rank_f.value || !size_f.value) {
    std::string missing;
    for (const Field* f : {&rank_f, &size_f}) {
      if (!f->value) missing += (missing.empty() ? "" : ", ") + f->name;
    }
    BERTH_FAIL("incomplete ", who, " variables: set: ", set, "; missing: ", missing, ". ", rank_f.name,
               " and ", size_f.name,
               " must be set together (a launcher sets both). Fix: start the run with the launcher, ",
               "set the missing variables, or unset the ones above for a single-process run.");
  }

  Reading r;
  r.source = source;
  r.rank = read_int(rank_f, 0);
  r.world_size = read_int(size_f, 1);
  r.vars = assignment(rank_f) + ", " + assignment(size_f);
  BERTH_CHECK(r.rank < r.world_size, assignment(rank_f), " but ", assignment(size_f),
              ": ranks run from 0 to ", size_f.name, "-1. Fix: set ", rank_f.name, " to 0..",
              r.world_size - 1, " or ", size_f.name,
              " to the number of processes (or let the launcher set both).");

  // Hand-set variables often give only RANK and WORLD_SIZE; that is a single-node run, where the local rank
  // is the rank. A local value that contradicts that assumption needs its partner to be meaningful.
  if (local_rank_f.value && local_size_f.value) {
    r.local_rank = read_int(local_rank_f, 0);
    r.local_world_size = read_int(local_size_f, 1);
    r.local_explicit = true;
  } else if (!local_rank_f.value && !local_size_f.value) {
    r.local_rank = r.rank;
    r.local_world_size = r.world_size;
  } else if (local_rank_f.value) {
    r.local_rank = read_int(local_rank_f, 0);
    BERTH_CHECK(r.local_rank == r.rank, assignment(local_rank_f), " differs from ", assignment(rank_f),
                ", so this run spans several nodes, but ", local_size_f.name,
                " (processes on this node) is missing. Fix: set ", local_size_f.name, " too, or launch with ",
                "torchrun, which sets all of them.");
    r.local_world_size = r.world_size;
  } else {
    r.local_world_size = read_int(local_size_f, 1);
    BERTH_CHECK(r.local_world_size == r.world_size, assignment(local_size_f), " differs from ",
                assignment(size_f), ", so this run spans several nodes, but ", local_rank_f.name,
                " (this process's index on its node) is missing. Fix: set ", local_rank_f.name,
                " too, or launch with torchrun, which sets all of them.");
    r.local_rank = r.rank;
  }
  if (r.local_explicit) r.vars += ", " + assignment(local_rank_f) + ", " + assignment(local_size_f);
  // Only reachable with both local variables set: the defaults above always satisfy it.
  BERTH_CHECK(r.local_rank < r.local_world_size, assignment(local_rank_f), " but ", assignment(local_size_f),
              ": local ranks run from 0 to ", local_size_f.name, "-1. Fix: correct or unset ",
              local_rank_f.name, " and ", local_size_f.name, " (launchers set them themselves).");
  BERTH_CHECK(r.local_world_size <= r.world_size, assignment(local_size_f), " but ", assignment(size_f),
              ": one node cannot run more processes than the whole job. Fix: correct or unset ",
              local_size_f.name, ".");
  return r;
}

// "2(x3),1" -> {2, 2, 2, 1}; nullopt for anything else.
std::optional<std::vector<int>> expand_tasks_per_node(const std::string& text) {
  std::vector<int> counts;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    long long repeat = 1;
    const size_t paren = item.find("(x");
    if (paren != std::string_view::npos) {
      if (item.back() != ')') return std::nullopt;
      const std::optional<int> r = text::parse_integer(item.substr(paren + 2, item.size() - paren - 3));
      if (!r || *r < 1 || *r > 100000) return std::nullopt;
      repeat = *r;
      item = item.substr(0, paren);
    }
    const std::optional<int> n = text::parse_integer(item);
    if (!n || *n < 1) return std::nullopt;
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int>(*n));
  }
  if (counts.empty()) return std::nullopt;
  return counts;
}

// sbatch runs the batch script with SLURM_PROCID=0, SLURM_NTASKS=<job tasks> and the like, but that script
// is one process, not rank 0 of many. Only srun starts job steps whose tasks are the ranks, and only srun
// sets both a step id (SLURM_STEP_ID, or the older SLURM_STEPID) and step variables (SLURM_STEP_NUM_TASKS,
// SLURM_SRUN_COMM_HOST). Requiring one of each keeps a bare sbatch or salloc shell single-process.
bool launched_by_srun(const EnvLookup& env) {
  const bool step_id = env("SLURM_STEP_ID") || env("SLURM_STEPID");
  const bool srun_vars = env("SLURM_STEP_NUM_TASKS") || env("SLURM_SRUN_COMM_HOST");
  return step_id && srun_vars;
}

std::optional<Reading> read_slurm(const EnvLookup& env) {
  if (!launched_by_srun(env)) return std::nullopt;
  // The step's task count, not the job's: a step may use only part of the allocation.
  Field size = field(env, "SLURM_STEP_NUM_TASKS");
  if (!size.value) size = field(env, "SLURM_NTASKS");
  if (!size.value) size = field(env, "SLURM_NPROCS");
  if (!size.value) size.name = "SLURM_STEP_NUM_TASKS";

  // srun gives tasks per node in a compressed per-node list; SLURM_NODEID picks this node's entry.
  Field local_size{"SLURM_STEP_TASKS_PER_NODE", std::nullopt};
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    const std::optional<std::string> raw = env(name);
    if (!raw) continue;
    const std::optional<std::vector<int>> counts = expand_tasks_per_node(*raw);
    if (!counts) continue;
    const std::optional<std::string> node_id = env("SLURM_NODEID");
    long long node = -1;  // a plain integer: GCC's -Wmaybe-uninitialized misfires on optional<long long> here
    if (node_id) node = text::parse_integer(*node_id).value_or(-1);
    int count = 0;
    local_size.name = name;
    if (counts->size() > 1 && node >= 0 && node < static_cast<long long>(counts->size())) {
      count = (*counts)[static_cast<size_t>(node)];
      local_size.name += "[SLURM_NODEID=" + *node_id + "]";
    } else if (std::all_of(counts->begin(), counts->end(), [&](int c) { return c == counts->front(); })) {
      count = counts->front();
    } else {
      BERTH_FAIL("cannot tell how many Slurm tasks run on this node: ", name, "=", *raw,
                 " differs between nodes and SLURM_NODEID is ", node_id ? "'" + *node_id + "'" : "unset",
                 ". Fix: launch with srun --ntasks-per-node=N so every node runs the same number of ranks.");
    }
    local_size.value = std::to_string(count);
    break;
  }
  return read_fields(DistSource::Slurm, field(env, "SLURM_PROCID"), size, field(env, "SLURM_LOCALID"),
                     local_size);
}

// Whether `outer` looks like the launcher that started `inner` once per node (srun starting one torchrun
// per node, or mpirun's daemons started by srun): then they describe different processes and need not agree.
bool contains(const Reading& outer, const Reading& inner) {
  const bool can_contain = outer.source == DistSource::Slurm ||
                           ((outer.source == DistSource::OpenMPI || outer.source == DistSource::PMI) &&
                            inner.source == DistSource::Torchrun);
  return can_contain && outer.local_explicit && outer.local_world_size == 1 &&
         outer.world_size < inner.world_size;
}

// "01-04" -> {"01", "02", "03", "04"}; "7" -> {"7"}.
void expand_range(const std::string& list, std::string_view range, std::vector<std::string>& out) {
  const size_t dash = range.find('-');
  const std::string_view low = range.substr(0, dash);
  const std::string_view high = dash == std::string_view::npos ? low : range.substr(dash + 1);
  const std::optional<int> lo = text::parse_digits(low);
  const std::optional<int> hi = text::parse_digits(high);
  BERTH_CHECK(lo && hi, "Slurm host list '", list, "' has a range '", range,
              "' that is not N or N-M with digits. Fix: set MASTER_ADDR to rank 0's host yourself.");
  BERTH_CHECK(*lo <= *hi, "Slurm host list '", list, "' has a descending range '", range,
              "'. Fix: set MASTER_ADDR to rank 0's host yourself.");
  BERTH_CHECK(*hi - *lo < 100000, "Slurm host list '", list, "' has a range '", range,
              "' of more than 100000 hosts. Fix: set MASTER_ADDR to rank 0's host yourself.");
  for (int v = *lo; v <= *hi; ++v) {
    std::string digits = std::to_string(v);
    if (digits.size() < low.size()) digits.insert(0, low.size() - digits.size(), '0');
    out.push_back(std::move(digits));
  }
}

// One host expression without top-level commas: "node[01-02]x[1,3]" -> its hosts, leftmost bracket slowest.
std::vector<std::string> expand_host(const std::string& list, std::string_view host) {
  const size_t open = host.find('[');
  const size_t stray = host.find(']');
  if (open == std::string_view::npos) {
    BERTH_CHECK(stray == std::string_view::npos, "Slurm host list '", list, "' has a ']' without '['. ",
                "Fix: set MASTER_ADDR to rank 0's host yourself.");
    return {std::string(host)};
  }
  const size_t close = host.find(']', open);
  BERTH_CHECK(stray >= open && close != std::string_view::npos &&
                  host.substr(open + 1, close - open - 1).find('[') == std::string_view::npos,
              "Slurm host list '", list, "' has unbalanced brackets. Fix: set MASTER_ADDR to rank 0's host ",
              "yourself.");
  std::vector<std::string> values;
  std::string_view inside = host.substr(open + 1, close - open - 1);
  while (true) {
    const size_t comma = inside.find(',');
    expand_range(list, inside.substr(0, comma), values);
    if (comma == std::string_view::npos) break;
    inside.remove_prefix(comma + 1);
  }
  const std::vector<std::string> tails = expand_host(list, host.substr(close + 1));
  std::vector<std::string> out;
  for (const std::string& v : values)
    for (const std::string& tail : tails) out.push_back(std::string(host.substr(0, open)) + v + tail);
  return out;
}

// Fills master_addr/master_port where the launcher left them unset and its own variables can tell.
void resolve_rendezvous(const EnvLookup& env, DistEnv& out) {
  const bool had_addr = out.master_addr.has_value();
  const bool had_port = out.master_port.has_value();
  const bool one_node = out.local_world_size == out.world_size;
  std::string addr_from = had_addr ? "MASTER_ADDR" : "";
  std::string port_from = had_port ? "MASTER_PORT" : "";
  if (out.source == DistSource::OpenMPI) {
    if (!had_addr) {
      BERTH_CHECK(one_node, "mpirun started ", out.world_size, " ranks on several nodes (",
                  "OMPI_COMM_WORLD_LOCAL_SIZE=", out.local_world_size,
                  ", OMPI_COMM_WORLD_SIZE=", out.world_size,
                  ") but MASTER_ADDR is unset, so the ranks cannot find rank 0. Fix: export ",
                  "it to every rank: mpirun -x MASTER_ADDR=<rank 0's host> -x MASTER_PORT=29500 ...");
      out.master_addr = "127.0.0.1";
      addr_from = "127.0.0.1 (mpirun on one node)";
    }
    if (!had_port) {
      out.master_port = 29500;
      port_from = "29500 (default)";
    }
  } else if (out.source == DistSource::Slurm) {
    if (!had_addr) {
      // The step's list first: a step may run on part of the allocation, and its rank 0 is on its first node.
      for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
        const std::optional<std::string> list = env(name);
        if (!list || text::trim(*list).empty()) continue;
        out.master_addr = expand_slurm_hostlist(std::string(text::trim(*list))).front();
        addr_from = std::string("first host of ") + name;
        break;
      }
      if (!out.master_addr) {
        BERTH_CHECK(
            one_node, "srun started ", out.world_size, " ranks on several nodes but neither ",
            "MASTER_ADDR nor a node list (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST) is set, so the ranks ",
            "cannot find rank 0. Fix: export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" ",
            "| head -n1) before srun.");
        out.master_addr = "127.0.0.1";
        addr_from = "127.0.0.1 (srun on one node)";
      }
    }
    if (!had_port) {
      std::optional<int> job;
      std::string job_var;
      for (const char* name : {"SLURM_JOB_ID", "SLURM_JOBID"}) {
        if (const std::optional<std::string> v = env(name)) {
          job = text::parse_integer(*v);
          job_var = name;
          break;
        }
      }
      if (job && *job >= 0) {
        out.master_port = slurm_master_port(*job);
        port_from = "derived from " + job_var;
      } else {
        out.master_port = 29500;
        port_from = "29500 (default)";
      }
    }
  }
  if (!addr_from.empty() || !port_from.empty())
    out.master_from = addr_from + (addr_from.empty() || port_from.empty() ? "" : ", ") + port_from;
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(const std::string& list) {
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    BERTH_CHECK(depth >= 0 && (i < list.size() || depth == 0), "Slurm host list '", list,
                "' has unbalanced brackets. Fix: set MASTER_ADDR to rank 0's host yourself.");
    if (c != ',' || depth > 0) continue;
    const std::string_view item = text::trim(std::string_view(list).substr(start, i - start));
    start = i + 1;
    BERTH_CHECK(!item.empty(), "Slurm host list '", list, "' has an empty entry. Fix: set MASTER_ADDR to ",
                "rank 0's host yourself.");
    for (std::string& h : expand_host(list, item)) hosts.push_back(std::move(h));
    BERTH_CHECK(hosts.size() <= 1000000, "Slurm host list '", list,
                "' expands to more than a million hosts. Fix: set MASTER_ADDR to rank 0's host yourself.");
  }
  return hosts;
}

int slurm_master_port(long long job_id) { return static_cast<int>(10000 + job_id % 20000); }

std::string to_string(DistSource source) {
  switch (source) {
    case DistSource::None:
      return "none";
    case DistSource::Torchrun:
      return "torchrun";
    case DistSource::OpenMPI:
      return "openmpi";
    case DistSource::Slurm:
      return "slurm";
    case DistSource::PMI:
      return "pmi";
  }
  return "unknown";
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

DistEnv detect_dist_env(const EnvLookup& env) {
  // Innermost launcher first: torchrun's workers may also carry the variables of the srun or mpirun that
  // started torchrun, and the innermost one describes this very process.
  std::vector<Reading> readings;
  auto add = [&](std::optional<Reading> r) {
    if (r) readings.push_back(std::move(*r));
  };
  add(read_fields(DistSource::Torchrun, field(env, "RANK"), field(env, "WORLD_SIZE"),
                  field(env, "LOCAL_RANK"), field(env, "LOCAL_WORLD_SIZE")));
  add(read_fields(DistSource::OpenMPI, field(env, "OMPI_COMM_WORLD_RANK"), field(env, "OMPI_COMM_WORLD_SIZE"),
                  field(env, "OMPI_COMM_WORLD_LOCAL_RANK"), field(env, "OMPI_COMM_WORLD_LOCAL_SIZE")));
  add(read_fields(DistSource::PMI, field(env, "PMI_RANK"), field(env, "PMI_SIZE"),
                  field(env, "MPI_LOCALRANKID"), field(env, "MPI_LOCALNRANKS")));
  add(read_slurm(env));

  DistEnv out;
  if (!readings.empty()) {
    Reading chosen = readings.front();
    for (size_t i = 1; i < readings.size(); ++i) {
      const Reading& other = readings[i];
      if (contains(other, readings.front())) continue;
      const bool locals_clash =
          chosen.local_explicit && other.local_explicit &&
          (chosen.local_rank != other.local_rank || chosen.local_world_size != other.local_world_size);
      BERTH_CHECK(chosen.rank == other.rank && chosen.world_size == other.world_size && !locals_clash,
                  "launcher variables disagree: ", display_name(chosen.source), " says rank ", chosen.rank,
                  " of ", chosen.world_size, " (", chosen.vars, ") but ", display_name(other.source),
                  " says rank ", other.rank, " of ", other.world_size, " (", other.vars,
                  "). Fix: unset one launcher's variables or launch with only one of them (variables left "
                  "exported from an earlier run are the usual cause).");
      if (!chosen.local_explicit && other.local_explicit) {
        chosen.local_rank = other.local_rank;
        chosen.local_world_size = other.local_world_size;
        chosen.local_explicit = true;
      }
    }
    out.rank = chosen.rank;
    out.world_size = chosen.world_size;
    out.local_rank = chosen.local_rank;
    out.local_world_size = chosen.local_world_size;
    out.source = chosen.source;
  }

  out.master_addr = env("MASTER_ADDR");
  if (const std::optional<std::string> port = env("MASTER_PORT")) {
    const std::optional<int> value = text::parse_integer(*port);
    BERTH_CHECK(value && *value >= 1 && *value <= 65535, "MASTER_PORT='", *port,
                "' is not a port: expected an integer from 1 to 65535. Fix: set MASTER_PORT to a free port "
                "(e.g. 29500) or unset it.");
    out.master_port = static_cast<int>(*value);
  }
  resolve_rendezvous(env, out);
  return out;
}

}  // namespace berth
