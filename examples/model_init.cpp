// The seed's error, and berth's answer: a model_init that leaves the model on a device other than the run's.
// Under placement "move" the Trainer places it and says so; under "strict" it refuses with a report of what
// is where and the fix. With two GPUs the model is built on cuda:1 for a run on cuda:0 (the seed's case);
// with one GPU on the CPU for a run on cuda:0; on a CPU-only machine there is no second real device, so
// the run's device is PyTorch's "meta" device (placement works on it; nothing is trained there).
//
//   model_init --model DIR
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "berth/core/error.h"
#include "berth/core/process_defaults.h"
#include "berth/device/device.h"
#include "berth/model/auto_model.h"
#include "berth/placement/place.h"
#include "berth/train/trainer.h"

BERTH_PROCESS_DEFAULTS();

namespace {

// The run's device and the "wrong" one model_init uses, by what this machine has.
std::pair<std::string, c10::Device> devices() {
  const auto cuda = berth::query_cuda();
  if (cuda.device_count >= 2) return {"cuda:0", c10::Device(c10::kCUDA, 1)};
  if (cuda.device_count == 1) return {"cuda:0", c10::Device(c10::kCPU)};
  return {"meta", c10::Device(c10::kCPU)};
}

}  // namespace

int main(int argc, char** argv) try {
  BERTH_CHECK(argc == 3 && std::string(argv[1]) == "--model", "usage: model_init --model DIR");
  const std::string model_dir = argv[2];
  const auto [run_device, wrong_device] = devices();

  for (const std::string policy : {"move", "strict"}) {
    berth::train::TrainerOptions options;
    options.args.output_dir = "model_init_example";
    options.args.device = run_device;
    options.args.placement = policy;
    // What the seed's users wrote: build the model, then move it by hand to a device of their choosing.
    options.model_init = [model_dir, wrong = wrong_device](const berth::train::Trial*) {
      auto model = berth::load_task_model(model_dir).model;
      berth::place(model->module(), wrong);
      return model;
    };
    std::cout << "== placement=" << policy << ": model_init builds the model on "
              << berth::device_name(wrong_device) << ", the run is on " << run_device << "\n";
    try {
      berth::train::Trainer trainer(std::move(options));
      std::cout << "the model is now on "
                << berth::device_name(*berth::module_device(trainer.model()->module())) << "\n";
    } catch (const berth::PlacementError& e) {
      std::cout << "PlacementError: " << e.what() << "\n";
    }
  }
  return 0;
} catch (const berth::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
}
