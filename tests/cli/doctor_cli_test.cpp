// The berth command as users run it: `berth doctor` output, JSON and exit codes for bad environments.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace {

using berth::testing::CliResult;

CliResult run_cli(const std::string& env_assignments, const std::string& args, bool merge_stderr = true) {
  return berth::testing::run_cli(args, merge_stderr, env_assignments);
}

TEST(DoctorCli, JsonParsesAndNamesThisRank) {
  auto result = run_cli("-u OMP_WAIT_POLICY", "doctor --json", /*merge_stderr=*/false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["distributed"]["world_size"], 1);
  EXPECT_TRUE(json["device"].is_string());
  // The berth command sets OpenMP's passive wait before libgomp starts, and libgomp applied it: no spinning,
  // so every CPU runs intra-op work.
  EXPECT_EQ(json["threads"]["omp_wait_policy"], "PASSIVE");
  EXPECT_EQ(json["threads"]["omp_spin_count"], 0) << json["threads"].dump();
  EXPECT_EQ(json["threads"]["intra_op"], json["threads"]["cpus_available"]);
}

// The torch berth is built on (scripts/requirements.txt pins PyPI's CUDA build) and what it compiled in. CI
// (CI=true) builds on that wheel with its CUDA toolchain, so a build there without CUDA or NCCL is a broken
// set-up, not a CPU-only machine: every CUDA and NCCL line must compile and link in every CI run.
TEST(DoctorCli, ReportsTorchTwoAndOnCiCudaAndNcclCompiledIn) {
  auto result = run_cli("", "doctor --json", /*merge_stderr=*/false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  const std::string torch_version = json["torch_version"].get<std::string>();
  EXPECT_EQ(torch_version.rfind("2.", 0), 0u) << torch_version;
  EXPECT_EQ(json["cuda"]["compiled"], json["features"]["cuda"]) << json.dump();
  EXPECT_TRUE(json["features"]["gloo"].get<bool>()) << json["features"].dump();
  const char* ci = std::getenv("CI");
  if (ci == nullptr || std::string(ci) != "true") GTEST_SKIP() << "not CI: a CPU-only torch is allowed here";
  EXPECT_TRUE(json["features"]["cuda"].get<bool>())
      << "CI must compile berth's CUDA code: scripts/build configures against the venv's CUDA torch and its "
         "cuda-toolkit wheels; see the `berth: torch ... cuda=` line of the configure log";
  EXPECT_TRUE(json["features"]["nccl"].get<bool>())
      << "CI must compile berth's NCCL code: nccl.h comes from the nvidia-nccl wheel beside torch";
  EXPECT_TRUE(json["cuda"]["compiled"].get<bool>()) << json["cuda"].dump();
}

// --version names berth's version and the torch it was built for, as doctor reports them.
TEST(DoctorCli, VersionNamesTheTorchBerthWasBuiltFor) {
  const auto json = nlohmann::json::parse(run_cli("", "doctor --json", /*merge_stderr=*/false).output);
  const auto version = run_cli("", "--version", /*merge_stderr=*/false);
  ASSERT_EQ(version.exit_code, 0) << version.output;
  const std::string devices = json["features"]["cuda"].get<bool>() ? "CPU and CUDA" : "CPU only";
  EXPECT_EQ(version.output, "berth " + json["berth_version"].get<std::string>() + " (built for torch " +
                                json["torch_version"].get<std::string>() + ", " + devices + ")\n");
}

TEST(DoctorCli, UserChosenWaitPolicyIsKeptAndSpinningGetsOneThread) {
  auto result = run_cli("OMP_WAIT_POLICY=ACTIVE", "doctor --json", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto threads = nlohmann::json::parse(result.output)["threads"];
  EXPECT_EQ(threads["omp_wait_policy"], "ACTIVE");
  EXPECT_GT(threads["omp_spin_count"].get<unsigned long long>(), 0u) << threads.dump();
  EXPECT_EQ(threads["intra_op"], 1) << threads.dump();
}

TEST(DoctorCli, SpinningWithSeveralThreadsIsWarned) {
  auto result = run_cli("OMP_WAIT_POLICY=ACTIVE", "--threads 2 doctor --json", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  if (json["threads"]["blas"].is_null() || json["threads"]["blas"].get<int>() < 2)
    GTEST_SKIP() << "BLAS runs one thread here";
  EXPECT_TRUE(
      berth::testing::contains(json["warnings"].get<std::vector<std::string>>(), "OpenMP threads spin"))
      << json["warnings"].dump();
}

TEST(DoctorCli, RankBeyondWorldSizeExitsTwoWithTheFix) {
  auto result = run_cli("RANK=3 WORLD_SIZE=2", "doctor");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("error: RANK=3 but WORLD_SIZE=2"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("Fix:"), std::string::npos) << result.output;
}

TEST(DoctorCli, MissingCudaDeviceExitsTwoWithTheFix) {
  auto result = run_cli("", "doctor --device cuda:1");
  if (result.exit_code == 0) GTEST_SKIP() << "this machine has a cuda:1";
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("error: device 'cuda:1' requested"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("Fix:"), std::string::npos) << result.output;
}

TEST(DoctorCli, BadDeviceSpellingListsAcceptedForms) {
  auto result = run_cli("", "doctor --device gpu0");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("gpu0"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("cuda:N"), std::string::npos) << result.output;
}

TEST(DoctorCli, DeviceFromEnvironmentVariable) {
  auto result = run_cli("BERTH_DEVICE=cpu", "doctor --json", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(nlohmann::json::parse(result.output)["device"], "cpu");
}

TEST(DoctorCli, UnknownFlagIsAUsageErrorWithExitTwo) {
  auto result = run_cli("", "doctor --bogus");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--bogus"), std::string::npos) << result.output;
}

TEST(DoctorCli, NegativeThreadsExitTwo) {
  auto result = run_cli("", "--threads -1 doctor");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("found -1"), std::string::npos) << result.output;
}

// Debian's reference BLAS (package libblas3) shadowing OpenBLAS through LD_LIBRARY_PATH is the trap for a
// torch built against the system BLAS: doctor must name the library that serves sgemm_ and warn. The PyPI
// torch links MKL into libtorch_cpu, so no libblas.so.3 is in play there and the variable changes nothing.
TEST(DoctorCli, ReferenceBlasIsDetectedAndWarned) {
  const char* reference_dir = "/usr/lib/x86_64-linux-gnu/blas";
  auto plain = run_cli("", "doctor --json", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto plain_json = nlohmann::json::parse(plain.output);
  auto result = run_cli(std::string("LD_LIBRARY_PATH=") + reference_dir, "doctor --json", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  if (plain_json["blas"]["kind"] == "mkl") {
    EXPECT_EQ(json["blas"], plain_json["blas"])
        << "the wheel's MKL serves matmuls whatever LD_LIBRARY_PATH says";
    return;
  }
  if (access((std::string(reference_dir) + "/libblas.so.3").c_str(), R_OK) != 0)
    GTEST_SKIP() << "Debian's reference BLAS (libblas3) is not installed";
  EXPECT_EQ(json["blas"]["kind"], "reference") << json["blas"].dump();
  bool warned = false;
  for (const auto& warning : json["warnings"])
    warned |=
        warning.get<std::string>().find("reference implementation") != std::string::npos &&
        warning.get<std::string>().find("Fix: apt-get install libopenblas0-pthread") != std::string::npos;
  EXPECT_TRUE(warned) << json["warnings"].dump();
}

// The pinned PyPI torch serves matmuls from the MKL linked into libtorch_cpu; doctor names it and its
// threads.
TEST(DoctorCli, TheTorchWheelsMklServesMatmuls) {
  auto result = run_cli("", "doctor --json", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["blas"]["kind"], "mkl") << json["blas"].dump();
  EXPECT_NE(json["blas"]["config"].get<std::string>().find("Intel"), std::string::npos)
      << json["blas"].dump();
  EXPECT_EQ(json["blas"]["threads"], json["threads"]["intra_op"]);
}

TEST(DoctorCli, ModelPlacementIsReportedByDeviceDtypeAndKind) {
  const std::string model = berth::testing::golden_dir() + "/tiny_bert_classifier";
  auto result = run_cli("", "doctor --json --device cpu --model " + model, false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output)["model"];
  EXPECT_EQ(report["architecture"], "BertForSequenceClassification");
  ASSERT_EQ(report["groups"].size(), 1u) << report.dump();
  EXPECT_EQ(report["groups"][0]["device"], "cpu");
  EXPECT_EQ(report["groups"][0]["dtype"], "float32");
  EXPECT_EQ(report["groups"][0]["kind"], "parameter");
  // 4 bytes per float32 element, and the one group is the whole.
  EXPECT_EQ(report["bytes"].get<int64_t>(), 4 * report["elements"].get<int64_t>());
  EXPECT_EQ(report["groups"][0]["bytes"], report["bytes"]);
  EXPECT_GT(report["tensors"].get<int64_t>(), 20);

  auto text = run_cli("", "doctor --device cpu --model " + model);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  berth::testing::expect_contains(text.output,
                                  {"Model", "BertForSequenceClassification", "cpu float32 parameters"});
}

TEST(DoctorCli, AModelThatDoesNotLoadIsAProblem) {
  berth::testing::TempDir dir;
  auto result = run_cli("", "doctor --device cpu --model " + dir.path().string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  berth::testing::expect_contains(result.output, {"Problems", dir.path().string()});
}

}  // namespace
