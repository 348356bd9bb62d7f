// berth doctor's report, gathered in this process: JSON keys, problems for bad launcher variables and
// devices.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/config.h"
#include "berth/doctor/doctor.h"
#include "support/test_support.h"

namespace {

using berth::testing::contains;
using berth::testing::ScopedEnv;

TEST(Doctor, JsonHasTheDocumentedKeys) {
  ScopedEnv env({{"RANK", nullptr}, {"WORLD_SIZE", nullptr}, {"LOCAL_RANK", nullptr}});
  auto report = berth::run_doctor();
  auto json = nlohmann::json::parse(berth::format_doctor_json(report));
  for (const char* key : {"berth_version", "torch_version", "features", "blas", "threads", "cuda",
                          "distributed", "device", "warnings", "problems"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  for (const char* key : {"available", "device_count", "devices"})
    EXPECT_TRUE(json["cuda"].contains(key)) << key;
  for (const char* key : {"rank", "world_size", "local_rank", "local_world_size", "source"})
    EXPECT_TRUE(json["distributed"].contains(key)) << key;
  for (const char* key : {"cuda", "nccl", "gloo", "mpi", "onednn"})
    EXPECT_TRUE(json["features"].contains(key)) << key;
  EXPECT_EQ(json["berth_version"], BERTH_VERSION);
  EXPECT_EQ(json["distributed"]["source"], "none");
  EXPECT_EQ(json["cuda"]["device_count"].get<int>(), report.cuda.device_count);
}

TEST(Doctor, SingleProcessOnThisMachineHasADeviceAndNoProblems) {
  ScopedEnv env({{"RANK", nullptr}, {"WORLD_SIZE", nullptr}, {"LOCAL_RANK", nullptr}});
  auto report = berth::run_doctor();
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  ASSERT_TRUE(report.device.has_value());
  EXPECT_EQ(*report.device, report.cuda.available ? "cuda:0" : "cpu");
}

TEST(Doctor, RankBeyondWorldSizeIsAProblemWithAFix) {
  ScopedEnv env({{"RANK", "3"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", nullptr}});
  auto report = berth::run_doctor();
  ASSERT_FALSE(report.problems.empty());
  EXPECT_TRUE(contains(report.problems, "RANK=3")) << report.problems.front();
  EXPECT_TRUE(contains(report.problems, "WORLD_SIZE=2")) << report.problems.front();
  EXPECT_TRUE(contains(report.problems, "Fix:")) << report.problems.front();
  EXPECT_FALSE(report.device.has_value());
  EXPECT_NE(berth::format_doctor_text(report).find("Problems"), std::string::npos);
}

TEST(Doctor, MissingCudaDeviceIsAProblem) {
  ScopedEnv env({{"RANK", nullptr}, {"WORLD_SIZE", nullptr}, {"LOCAL_RANK", nullptr}});
  berth::DoctorOptions options;
  options.device = "cuda:7";
  auto report = berth::run_doctor(options);
  if (report.cuda.device_count > 7) GTEST_SKIP() << "this machine has a cuda:7";
  ASSERT_FALSE(report.problems.empty());
  EXPECT_TRUE(contains(report.problems, "cuda:7")) << report.problems.front();
  EXPECT_TRUE(contains(report.problems, "Fix:")) << report.problems.front();
}

// The kernel's own view of the CPU (/proc/cpuinfo's flags line) against what doctor read through torch.
TEST(Doctor, Bf16NamesWhatTheKernelSaysTheCpuHas) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line";
  const auto has = [&](const char* flag) {
    return flags.find(std::string(" ") + flag + " ") != std::string::npos;
  };
  const auto report = berth::run_doctor();
  const std::string expected = has("amx_bf16") && has("amx_tile") ? "amx"
                               : has("avx512_bf16")               ? "avx512_bf16"
                                                                  : "none";
  EXPECT_EQ(report.bf16.isa, expected) << flags;
  EXPECT_GT(report.bf16.fp32_gflops, 0);
  EXPECT_GT(report.bf16.bf16_gflops, 0);
  const auto json = nlohmann::json::parse(berth::format_doctor_json(report));
  EXPECT_EQ(json["bf16"]["isa"], expected);
  EXPECT_NE(berth::format_doctor_text(report).find("bf16 matmuls: "), std::string::npos);
}

TEST(Doctor, TextNamesEverySection) {
  auto text = berth::format_doctor_text(berth::run_doctor());
  for (const char* section :
       {"berth doctor", "BLAS and threads", "CUDA", "Distributed", "this rank's device"})
    EXPECT_NE(text.find(section), std::string::npos) << section;
}

}  // namespace
