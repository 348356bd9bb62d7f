// Tests device parsing, CUDA queries and resolve_device's errors, faking CUDA machines with hand-made
// CudaInfo.
#include "berth/device/device.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "berth/config.h"
#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth {
namespace {

using testing::error_text;
using testing::ScopedEnv;

using Kind = DeviceRequest::Kind;

CudaInfo cpu_only() { return CudaInfo{}; }

CudaInfo fake_gpus(int count, std::optional<std::string> visible = std::nullopt) {
  CudaInfo info;
  info.compiled = true;
  info.available = count > 0;
  info.device_count = count;
  info.visible_devices = std::move(visible);
  return info;
}

TEST(Device, ParsesAcceptedForms) {
  struct Case {
    std::string text;
    Kind kind;
    std::optional<int> index;
  };
  const std::vector<Case> cases = {
      {"auto", Kind::Auto, std::nullopt},
      {"cpu", Kind::Cpu, std::nullopt},
      {"CPU", Kind::Cpu, std::nullopt},
      {"cpu:0", Kind::Cpu, std::nullopt},
      {"  cuda ", Kind::Cuda, std::nullopt},
      {"cuda:0", Kind::Cuda, 0},
      {"CUDA:1", Kind::Cuda, 1},
      {"cuda:12", Kind::Cuda, 12},
      {"meta", Kind::Meta, std::nullopt},
      {"Auto", Kind::Auto, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const DeviceRequest request = parse_device(c.text);
    EXPECT_EQ(request.kind, c.kind);
    EXPECT_EQ(request.index, c.index);
  }
}

TEST(Device, KeepsTrimmedSpellingForMessages) { EXPECT_EQ(parse_device("  CUDA:1 ").text, "CUDA:1"); }

TEST(Device, RejectsBadFormsListingAcceptedOnes) {
  for (const std::string bad : {"gpu", "cuda:-1", "cuda:x", "cuda:1:2", "", "   ", "cuda:", "cpu:1",
                                "cuda:+1", "cuda: 1", "meta:0", "mps", "cuda:99999999999"}) {
    SCOPED_TRACE("'" + bad + "'");
    const std::string message = error_text([&] { parse_device(bad); });
    EXPECT_NE(message.find("auto, cpu, cuda, cuda:N (N = 0, 1, ...), meta"), std::string::npos) << message;
    EXPECT_NE(message.find("invalid device '"), std::string::npos) << message;
  }
}

TEST(Device, GpuSuggestsCuda) {
  const std::string message = error_text([] { parse_device("gpu"); });
  EXPECT_NE(message.find("invalid device 'gpu': expected one of"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'cuda'"), std::string::npos) << message;
}

TEST(Device, CpuAndMetaResolveEverywhere) {
  for (const CudaInfo& cuda : {cpu_only(), fake_gpus(2)}) {
    EXPECT_EQ(resolve_device(parse_device("cpu"), cuda), c10::Device(c10::kCPU));
    EXPECT_EQ(resolve_device(parse_device("meta"), cuda), c10::Device(c10::kMeta));
  }
}

TEST(Device, AutoPicksCudaZeroOnlyWhenUsable) {
  EXPECT_EQ(resolve_device(parse_device("auto"), cpu_only()), c10::Device(c10::kCPU));
  EXPECT_EQ(resolve_device(parse_device("auto"), fake_gpus(0)), c10::Device(c10::kCPU));
  EXPECT_EQ(resolve_device(parse_device("auto"), fake_gpus(2)), c10::Device(c10::kCUDA, 0));
}

TEST(Device, CudaOnCpuOnlyBuildExplainsFix) {
  const std::string message = error_text([] { resolve_device(parse_device("cuda:1"), cpu_only()); });
  EXPECT_NE(message.find("device 'cuda:1' requested"), std::string::npos) << message;
  EXPECT_NE(message.find("built without CUDA (CPU only)"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES is unset"), std::string::npos) << message;
  EXPECT_NE(message.find("Fix: use --device cpu (or auto)"), std::string::npos) << message;
  EXPECT_NE(message.find("-DTorch_DIR"), std::string::npos) << message;
}

TEST(Device, ExistingCudaIndexResolves) {
  EXPECT_EQ(resolve_device(parse_device("cuda"), fake_gpus(2)), c10::Device(c10::kCUDA, 0));
  EXPECT_EQ(resolve_device(parse_device("cuda:1"), fake_gpus(2)), c10::Device(c10::kCUDA, 1));
}

TEST(Device, MissingCudaIndexNamesVisibleDevicesAndFix) {
  const std::string message =
      error_text([] { resolve_device(parse_device("cuda:3"), fake_gpus(2, std::string("0,1"))); });
  EXPECT_NE(message.find("device 'cuda:3' requested, but only 2 CUDA devices are visible (cuda:0, cuda:1)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES=0,1 renumbers the visible GPUs from 0"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Fix: use cuda:0..cuda:1, or change CUDA_VISIBLE_DEVICES."), std::string::npos)
      << message;
}

TEST(Device, MissingCudaIndexWithOneGpuAndUnsetVisibleDevices) {
  const std::string message = error_text([] { resolve_device(parse_device("cuda:1"), fake_gpus(1)); });
  EXPECT_NE(message.find("only 1 CUDA device is visible (cuda:0)"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES is unset"), std::string::npos) << message;
  EXPECT_NE(message.find("Fix: use cuda:0."), std::string::npos) << message;
}

TEST(Device, NoVisibleGpuSaysDriverOrVisibleDevices) {
  const std::string driver = error_text([] { resolve_device(parse_device("cuda"), fake_gpus(0)); });
  EXPECT_NE(driver.find("device 'cuda' requested, but no CUDA device is visible"), std::string::npos)
      << driver;
  EXPECT_NE(driver.find("driver"), std::string::npos) << driver;
  EXPECT_NE(driver.find("CUDA_VISIBLE_DEVICES is unset"), std::string::npos) << driver;

  const std::string hidden = error_text([] { resolve_device(parse_device("cuda:0"), fake_gpus(0, "")); });
  EXPECT_NE(hidden.find("CUDA_VISIBLE_DEVICES=\"\" hides every GPU"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("Fix: unset CUDA_VISIBLE_DEVICES"), std::string::npos) << hidden;
}

TEST(Device, QueryMatchesThisBuild) {
  const CudaInfo info = query_cuda();
  EXPECT_EQ(info.compiled, BERTH_WITH_CUDA || info.available);
  EXPECT_EQ(info.available, info.device_count > 0);
  if (BERTH_WITH_CUDA) {
    EXPECT_EQ(static_cast<int>(info.devices.size()), info.device_count);
  } else {
    EXPECT_EQ(info.device_count, 0);
    EXPECT_TRUE(info.devices.empty());
  }
}

TEST(Device, QueryReadsCudaEnvironment) {
  // The CUDA runtime reads CUDA_VISIBLE_DEVICES once, when it starts: start it first so the fake value
  // below cannot hide real GPUs from later tests in a CUDA build.
  const int real_count = query_cuda().device_count;
  {
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "3,1");
    ScopedEnv order("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    const CudaInfo info = query_cuda();
    EXPECT_EQ(info.visible_devices, std::optional<std::string>("3,1"));
    EXPECT_EQ(info.device_order, std::optional<std::string>("PCI_BUS_ID"));
    EXPECT_EQ(info.device_count, real_count);
  }
  {
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "x");
    ::unsetenv("CUDA_VISIBLE_DEVICES");
    EXPECT_FALSE(query_cuda().visible_devices.has_value());
  }
}

TEST(Device, OrderAdviceExplainsBothOrdersAndCurrentValue) {
  CudaInfo cuda = fake_gpus(2);
  const std::string unset = device_order_advice(cuda);
  EXPECT_NE(unset.find("FASTEST_FIRST"), std::string::npos) << unset;
  EXPECT_NE(unset.find("nvidia-smi"), std::string::npos) << unset;
  EXPECT_NE(unset.find("Set CUDA_DEVICE_ORDER=PCI_BUS_ID"), std::string::npos) << unset;
  EXPECT_NE(unset.find("CUDA_DEVICE_ORDER is unset"), std::string::npos) << unset;

  cuda.device_order = "PCI_BUS_ID";
  cuda.visible_devices = "2,3";
  const std::string pci = device_order_advice(cuda);
  EXPECT_NE(pci.find("CUDA_DEVICE_ORDER=PCI_BUS_ID here"), std::string::npos) << pci;
  EXPECT_NE(pci.find("CUDA_VISIBLE_DEVICES=2,3 also renumbers"), std::string::npos) << pci;

  cuda.device_order = "BOGUS";
  EXPECT_NE(device_order_advice(cuda).find("CUDA_DEVICE_ORDER=BOGUS here, which is not a value CUDA knows"),
            std::string::npos);
}

TEST(Device, NamesDevicesTheWayMessagesDo) {
  EXPECT_EQ(device_name(c10::Device(c10::kCPU)), "cpu");
  EXPECT_EQ(device_name(c10::Device(c10::kCUDA, 1)), "cuda:1");
  EXPECT_EQ(device_name(c10::Device(c10::kMeta)), "meta");
}

}  // namespace
}  // namespace berth
