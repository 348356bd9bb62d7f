// `berth doctor [--json] [--device D]`: prints the device and environment checklist; exit 2 on problems.
#include <iostream>

#include "berth/doctor/doctor.h"
#include "command.h"

namespace berth::cli {

CommandAction add_doctor_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("doctor",
                                 "Check versions, BLAS, threads, CUDA, the launcher, this rank's device and "
                                 "(--model) a model's placement");
  auto options = std::make_shared<DoctorOptions>();
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print one JSON object instead of the checklist");
  cmd->add_option("--device", options->device,
                  "Device to check, as a run would take it: auto, cpu, cuda, cuda:N, meta")
      ->envname("BERTH_DEVICE")
      ->capture_default_str();
  cmd->add_flag("--allow-shared-device", options->allow_shared_device,
                "Allow several local ranks on one GPU (off: berth runs one process per device)")
      ->envname("BERTH_ALLOW_SHARED_DEVICE");
  cmd->add_option("--model", options->model_dir,
                  "HF model directory to load and place on the device as a run would; reports its tensors by "
                  "device, dtype and bytes");
  return [options, json] {
    DoctorReport report = run_doctor(*options);
    if (*json) {
      std::cout << format_doctor_json(report) << std::endl;
    } else {
      std::cout << format_doctor_text(report) << std::flush;
    }
    if (report.problems.empty()) return 0;
    for (const auto& problem : report.problems) std::cerr << "error: " << problem << "\n";
    return 2;
  };
}

}  // namespace berth::cli
