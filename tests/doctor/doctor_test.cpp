// berth doctor's report, gathered in this process: JSON keys, problems for bad launcher variables and
// devices.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

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

TEST(Doctor, TextNamesEverySection) {
  auto text = berth::format_doctor_text(berth::run_doctor());
  for (const char* section :
       {"berth doctor", "BLAS and threads", "CUDA", "Distributed", "this rank's device"})
    EXPECT_NE(text.find(section), std::string::npos) << section;
}

}  // namespace
