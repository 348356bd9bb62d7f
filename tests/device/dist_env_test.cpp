// Tests launcher detection (torchrun, OpenMPI, Slurm, PMI) on hand-written environments, errors included.
#include "berth/device/dist_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth {
namespace {

using testing::expect_contains;

using Env = std::map<std::string, std::string>;

EnvLookup table(Env env) {
  return [env = std::move(env)](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

std::string env_error(const Env& env) {
  return testing::error_text([&] { detect_dist_env(table(env)); });
}

// What srun exports to task `rank` of a 4-task, 2-node step (the variables this code reads).
Env srun_task(int rank) {
  return {{"SLURM_JOB_ID", "77"},
          {"SLURM_JOB_NODELIST", "node[01-02]"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEPID", "0"},
          {"SLURM_SRUN_COMM_HOST", "10.0.0.1"},
          {"SLURM_STEP_NUM_TASKS", "4"},
          {"SLURM_NTASKS", "4"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_NODEID", std::to_string(rank / 2)},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_LOCALID", std::to_string(rank % 2)}};
}

Env torchrun_worker(int rank, int world, int local_rank, int local_world) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(local_world)},
          {"GROUP_RANK", std::to_string(rank / local_world)},
          {"MASTER_ADDR", "node0"},
          {"MASTER_PORT", "29500"}};
}

Env merged(Env a, const Env& b) {
  a.insert(b.begin(), b.end());
  return a;
}

TEST(DistEnv, NoLauncherIsSingleProcess) {
  const DistEnv env = detect_dist_env(table({{"HOME", "/root"}}));
  EXPECT_EQ(env.source, DistSource::None);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_world_size, 1);
  EXPECT_FALSE(env.distributed());
  EXPECT_FALSE(env.master_addr.has_value());
  EXPECT_FALSE(env.master_port.has_value());
}

TEST(DistEnv, TorchrunFull) {
  const DistEnv env = detect_dist_env(table(torchrun_worker(5, 8, 1, 4)));
  EXPECT_EQ(env.source, DistSource::Torchrun);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_TRUE(env.distributed());
  EXPECT_EQ(env.master_addr, std::optional<std::string>("node0"));
  EXPECT_EQ(env.master_port, std::optional<int>(29500));
}

TEST(DistEnv, HandSetRankAndWorldSizeMeanOneNode) {
  const DistEnv env = detect_dist_env(table({{"RANK", "1"}, {"WORLD_SIZE", "3"}}));
  EXPECT_EQ(env.source, DistSource::Torchrun);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 3);
}

TEST(DistEnv, PartialTorchrunListsSetAndMissing) {
  expect_contains(env_error({{"LOCAL_RANK", "0"}}), {"incomplete torchrun variables", "set: LOCAL_RANK=0",
                                                     "missing: RANK, WORLD_SIZE", "Fix:"});
  expect_contains(env_error({{"RANK", "0"}}), {"set: RANK=0", "missing: WORLD_SIZE"});
  expect_contains(env_error({{"WORLD_SIZE", "2"}}), {"set: WORLD_SIZE=2", "missing: RANK"});
}

TEST(DistEnv, LocalRankOffNodeNeedsLocalWorldSize) {
  expect_contains(env_error({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}}),
                  {"LOCAL_RANK=1 differs from RANK=3", "LOCAL_WORLD_SIZE", "missing"});
}

TEST(DistEnv, RankMustBeBelowWorldSize) {
  expect_contains(env_error({{"RANK", "3"}, {"WORLD_SIZE", "2"}}),
                  {"RANK=3 but WORLD_SIZE=2: ranks run from 0 to WORLD_SIZE-1. Fix:"});
}

TEST(DistEnv, LocalRankMustBeBelowLocalWorldSize) {
  expect_contains(env_error(torchrun_worker(2, 4, 2, 2)),
                  {"LOCAL_RANK=2 but LOCAL_WORLD_SIZE=2", "from 0 to LOCAL_WORLD_SIZE-1"});
}

TEST(DistEnv, NonIntegerAndNegativeValuesNameTheVariable) {
  expect_contains(env_error({{"RANK", "one"}, {"WORLD_SIZE", "2"}}),
                  {"RANK='one' is not an integer", "Fix:"});
  expect_contains(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2.5"}}), {"WORLD_SIZE='2.5' is not an integer"});
  expect_contains(env_error({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), {"RANK=-1 is negative"});
  expect_contains(env_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), {"WORLD_SIZE=0", "at least 1"});
  expect_contains(env_error({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                  {"OMPI_COMM_WORLD_RANK='x' is not an integer"});
}

TEST(DistEnv, OpenMpi) {
  const DistEnv env = detect_dist_env(table({{"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                             {"MASTER_ADDR", "node0"}}));
  EXPECT_EQ(env.source, DistSource::OpenMPI);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
}

TEST(DistEnv, SlurmViaSrun) {
  const DistEnv env = detect_dist_env(table(srun_task(3)));
  EXPECT_EQ(env.source, DistSource::Slurm);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
}

TEST(DistEnv, SlurmUnevenNodesUseThisNodesCount) {
  Env env = srun_task(0);
  env["SLURM_STEP_NUM_TASKS"] = "5";
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x2),1";
  env["SLURM_NODEID"] = "2";
  env["SLURM_PROCID"] = "4";
  env["SLURM_LOCALID"] = "0";
  const DistEnv detected = detect_dist_env(table(env));
  EXPECT_EQ(detected.world_size, 5);
  EXPECT_EQ(detected.local_world_size, 1);

  env.erase("SLURM_NODEID");
  expect_contains(env_error(env), {"SLURM_STEP_TASKS_PER_NODE=2(x2),1", "SLURM_NODEID is unset"});
}

TEST(DistEnv, SlurmBatchScriptIsNotDistributed) {
  // What an sbatch --ntasks=4 script sees before any srun: job variables, no step.
  const DistEnv env = detect_dist_env(table({{"SLURM_JOB_ID", "77"},
                                             {"SLURM_PROCID", "0"},
                                             {"SLURM_LOCALID", "0"},
                                             {"SLURM_NTASKS", "4"},
                                             {"SLURM_NODEID", "0"},
                                             {"SLURM_TASKS_PER_NODE", "4"}}));
  EXPECT_EQ(env.source, DistSource::None);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_FALSE(env.distributed());
}

TEST(DistEnv, Pmi) {
  const DistEnv env = detect_dist_env(
      table({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}}));
  EXPECT_EQ(env.source, DistSource::PMI);
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_world_size, 2);
}

TEST(DistEnv, TorchrunAndOpenMpiAgreeing) {
  const Env env = merged({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, {{"OMPI_COMM_WORLD_RANK", "1"},
                                                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  const DistEnv detected = detect_dist_env(table(env));
  EXPECT_EQ(detected.source, DistSource::Torchrun);
  EXPECT_EQ(detected.rank, 1);
  EXPECT_EQ(detected.world_size, 2);
  // torchrun's locals were only defaulted; OpenMPI knows this is one rank per node.
  EXPECT_EQ(detected.local_rank, 0);
  EXPECT_EQ(detected.local_world_size, 1);
}

TEST(DistEnv, ConflictingSourcesNameBoth) {
  const Env env = merged({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, {{"OMPI_COMM_WORLD_RANK", "3"},
                                                                {"OMPI_COMM_WORLD_SIZE", "4"},
                                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  expect_contains(env_error(env),
                  {"launcher variables disagree", "torchrun says rank 1 of 2 (RANK=1, WORLD_SIZE=2)",
                   "OpenMPI says rank 3 of 4", "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
                   "Fix: unset one launcher's variables or launch with only one of them"});
}

TEST(DistEnv, SrunStartingOneTorchrunPerNodeIsNotAConflict) {
  // srun -N2 --ntasks-per-node=1 torchrun --nproc-per-node=4: the worker inherits the srun task's variables,
  // which describe its torchrun agent, not the worker.
  Env slurm = srun_task(1);
  slurm["SLURM_STEP_NUM_TASKS"] = "2";
  slurm["SLURM_NTASKS"] = "2";
  slurm["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  slurm["SLURM_NODEID"] = "1";
  slurm["SLURM_LOCALID"] = "0";
  const DistEnv env = detect_dist_env(table(merged(torchrun_worker(6, 8, 2, 4), slurm)));
  EXPECT_EQ(env.source, DistSource::Torchrun);
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_world_size, 4);
}

TEST(DistEnv, SrunAndStaleTorchrunVariablesConflict) {
  expect_contains(env_error(merged({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, srun_task(3))),
                  {"torchrun says rank 0 of 2", "Slurm (srun) says rank 3 of 4", "SLURM_PROCID=3"});
}

TEST(DistEnv, MasterPortMustBeAPort) {
  for (const std::string bad : {"0", "65536", "http", "-5", ""}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_contains(env_error({{"MASTER_PORT", bad}}),
                    {"MASTER_PORT='" + bad + "' is not a port", "1 to 65535", "Fix:"});
  }
  EXPECT_EQ(detect_dist_env(table({{"MASTER_PORT", "65535"}})).master_port, std::optional<int>(65535));
}

TEST(DistEnvRendezvous, OpenMpiOnOneNodeDefaultsToLoopback) {
  const DistEnv env = detect_dist_env(table({{"OMPI_COMM_WORLD_RANK", "1"},
                                             {"OMPI_COMM_WORLD_SIZE", "2"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  EXPECT_EQ(env.master_addr, std::optional<std::string>("127.0.0.1"));
  EXPECT_EQ(env.master_port, std::optional<int>(29500));
  EXPECT_EQ(env.master_from, "127.0.0.1 (mpirun on one node), 29500 (default)");
}

TEST(DistEnvRendezvous, OpenMpiOnSeveralNodesNeedsMasterAddr) {
  const Env two_nodes = {{"OMPI_COMM_WORLD_RANK", "3"},
                         {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  expect_contains(env_error(two_nodes),
                  {"mpirun started 4 ranks on several nodes", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                   "MASTER_ADDR is unset", "mpirun -x MASTER_ADDR="});
  const DistEnv env =
      detect_dist_env(table(merged(two_nodes, {{"MASTER_ADDR", "head"}, {"MASTER_PORT", "1234"}})));
  EXPECT_EQ(env.master_addr, std::optional<std::string>("head"));
  EXPECT_EQ(env.master_port, std::optional<int>(1234));
  EXPECT_EQ(env.master_from, "MASTER_ADDR, MASTER_PORT");
  // The port alone may be left to the default.
  EXPECT_EQ(detect_dist_env(table(merged(two_nodes, {{"MASTER_ADDR", "head"}}))).master_port,
            std::optional<int>(29500));
}

TEST(DistEnvRendezvous, SlurmTakesTheFirstNodeAndAJobPort) {
  struct Case {
    Env extra;
    std::string addr;
    int port;
    std::string from;
  };
  const std::vector<Case> cases = {
      {{}, "node01", 10077, "first host of SLURM_JOB_NODELIST, derived from SLURM_JOB_ID"},
      {{{"SLURM_STEP_NODELIST", "gpu[7-8]"}}, "gpu7", 10077, "first host of SLURM_STEP_NODELIST"},
      {{{"SLURM_JOB_ID", "123456"}}, "node01", 10000 + 123456 % 20000, "derived from SLURM_JOB_ID"},
      {{{"MASTER_PORT", "4242"}}, "node01", 4242, "first host of SLURM_JOB_NODELIST, MASTER_PORT"},
      {{{"MASTER_ADDR", "login1"}}, "login1", 10077, "MASTER_ADDR, derived from SLURM_JOB_ID"},
  };
  for (const Case& c : cases) {
    Env env = srun_task(2);
    for (const auto& [k, v] : c.extra) env[k] = v;
    const DistEnv detected = detect_dist_env(table(env));
    EXPECT_EQ(detected.master_addr, std::optional<std::string>(c.addr));
    EXPECT_EQ(detected.master_port, std::optional<int>(c.port));
    EXPECT_TRUE(testing::contains(detected.master_from, c.from)) << detected.master_from;
  }
  Env old_name = srun_task(0);
  old_name.erase("SLURM_JOB_NODELIST");
  old_name["SLURM_NODELIST"] = "a-[3-4]-b";
  EXPECT_EQ(detect_dist_env(table(old_name)).master_addr, std::optional<std::string>("a-3-b"));
  old_name.erase("SLURM_NODELIST");
  expect_contains(env_error(old_name),
                  {"srun started 4 ranks on several nodes", "SLURM_JOB_NODELIST", "export MASTER_ADDR="});
}

TEST(DistEnvRendezvous, TorchrunAndNoLauncherAreLeftAlone) {
  EXPECT_FALSE(detect_dist_env(table({{"RANK", "0"}, {"WORLD_SIZE", "2"}})).master_addr.has_value());
  const DistEnv env = detect_dist_env(table(torchrun_worker(0, 2, 0, 2)));
  EXPECT_EQ(env.master_addr, std::optional<std::string>("node0"));
  EXPECT_EQ(env.master_from, "MASTER_ADDR, MASTER_PORT");
}

TEST(SlurmHostlist, ExpandsCompressedLists) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_slurm_hostlist("node[01-04,07],gpu5"),
            (V{"node01", "node02", "node03", "node04", "node07", "gpu5"}));
  EXPECT_EQ(expand_slurm_hostlist("a-[1-2]-b"), (V{"a-1-b", "a-2-b"}));
  EXPECT_EQ(expand_slurm_hostlist("n[8-10]"), (V{"n8", "n9", "n10"}));
  EXPECT_EQ(expand_slurm_hostlist("n[098-100]"), (V{"n098", "n099", "n100"}));
  EXPECT_EQ(expand_slurm_hostlist("r[1-2]n[1,3]"), (V{"r1n1", "r1n3", "r2n1", "r2n3"}));
  EXPECT_EQ(expand_slurm_hostlist("single"), (V{"single"}));
  EXPECT_EQ(expand_slurm_hostlist("x[5]"), (V{"x5"}));
  EXPECT_EQ(expand_slurm_hostlist("a,b[1-2],c"), (V{"a", "b1", "b2", "c"}));
}

TEST(SlurmHostlist, RefusesMalformedLists) {
  struct Case {
    std::string list;
    std::string fault;
  };
  for (const Case& c : std::vector<Case>{{"node[1-2", "unbalanced brackets"},
                                         {"node1-2]", "unbalanced brackets"},
                                         {"node[a-b]", "range 'a-b'"},
                                         {"node[5-3]", "descending range '5-3'"},
                                         {"a,,b", "empty entry"},
                                         {"n[[1]]", "unbalanced brackets"}}) {
    const std::string text = testing::error_text([&] { expand_slurm_hostlist(c.list); });
    expect_contains(text, {"'" + c.list + "'", c.fault, "MASTER_ADDR"});
  }
  EXPECT_EQ(slurm_master_port(77), 10077);
  EXPECT_EQ(slurm_master_port(20000), 10000);
}

TEST(DistEnv, SourceNames) {
  EXPECT_EQ(to_string(DistSource::None), "none");
  EXPECT_EQ(to_string(DistSource::Torchrun), "torchrun");
  EXPECT_EQ(to_string(DistSource::OpenMPI), "openmpi");
  EXPECT_EQ(to_string(DistSource::Slurm), "slurm");
  EXPECT_EQ(to_string(DistSource::PMI), "pmi");
}

TEST(DistEnv, ProcessEnvReadsTheRealEnvironment) {
  ::setenv("BERTH_DIST_ENV_TEST_VAR", "42", 1);
  const EnvLookup env = process_env();
  EXPECT_EQ(env("BERTH_DIST_ENV_TEST_VAR"), std::optional<std::string>("42"));
  ::unsetenv("BERTH_DIST_ENV_TEST_VAR");
  EXPECT_FALSE(env("BERTH_DIST_ENV_TEST_VAR").has_value());
}

}  // namespace
}  // namespace berth
