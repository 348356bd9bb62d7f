// `berth launch --nproc-per-node N [...] -- COMMAND...`: torchrun's job for one node, in berth.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/launch/launcher.h"
#include "command.h"

namespace berth::cli {
namespace {

// "cuda:0, cuda:1" -> {"cuda:0", "cuda:1"}, each checked as a device spelling.
std::vector<std::string> split_devices(const std::string& list) {
  std::vector<std::string> devices;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    BERTH_CHECK(!item.empty(), "--device '", list, "' has an empty entry. Fix: list devices separated by ",
                "commas, e.g. --device cuda:0,cuda:1.");
    parse_device(item);  // throws with the accepted spellings
    devices.push_back(item);
    start = comma + 1;
  }
  return devices;
}

}  // namespace

CommandAction add_launch_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "launch",
      "Start workers with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...): "
      "berth launch --nproc-per-node 2 -- berth train ...");
  auto options = std::make_shared<launch::LaunchOptions>();
  auto nproc = std::make_shared<std::string>();
  auto devices = std::make_shared<std::string>();
  auto command = std::make_shared<std::vector<std::string>>();
  cmd->add_option(
         "--nproc-per-node,--nproc_per_node", *nproc,
         "Workers on this node: a number, or auto (one per visible GPU, else 1); default 1, or one per "
         "--device entry")
      ->envname("BERTH_NPROC_PER_NODE");
  cmd->add_option("--nnodes", options->nnodes, "Machines in the job, each running its own berth launch")
      ->envname("BERTH_NNODES")
      ->capture_default_str();
  cmd->add_option("--node-rank,--node_rank", options->node_rank, "This machine's index, 0..nnodes-1")
      ->envname("BERTH_NODE_RANK")
      ->capture_default_str();
  cmd->add_option("--master-addr,--master_addr", options->master_addr, "Host of rank 0 (node rank 0)")
      ->envname("MASTER_ADDR")
      ->capture_default_str();
  cmd->add_option("--master-port,--master_port", options->master_port,
                  "Rendezvous port on the master; 0 = a free port (one node only)")
      ->envname("MASTER_PORT")
      ->capture_default_str();
  cmd->add_option("--max-restarts,--max_restarts", options->max_restarts,
                  "Restart the whole group this many times when a worker fails (workers see "
                  "TORCHELASTIC_RESTART_COUNT; berth train resumes from its latest checkpoint)")
      ->capture_default_str();
  cmd->add_option("--local-addr,--local_addr", options->local_addr,
                  "Address of this node's interface for the workers' traffic (exported as BERTH_LOCAL_ADDR)");
  cmd->add_option("--device", *devices,
                  "Comma-separated devices, one per worker (exported as BERTH_DEVICE), e.g. cuda:0,cuda:1");
  cmd->add_option("--stop-grace,--stop_grace", options->stop_grace_s,
                  "Seconds between SIGTERM and SIGKILL when stopping workers")
      ->capture_default_str();
  cmd->add_option("command", *command, "The program and its arguments, after --");

  return [options, nproc, devices, command] {
    if (!devices->empty()) options->devices = split_devices(*devices);
    if (!nproc->empty()) {
      options->nproc_per_node = launch::parse_nproc(*nproc);
      if (*nproc == "auto" && options->devices.empty()) {
        const CudaInfo cuda = query_cuda();
        if (cuda.available && cuda.device_count > 0) options->default_device = "cuda";
      }
    } else if (!options->devices.empty()) {
      options->nproc_per_node = static_cast<int>(options->devices.size());
    }
    if (options->devices.empty()) {
      if (const char* device = std::getenv("BERTH_DEVICE"); device != nullptr && *device != '\0')
        options->default_device = device;
    }
    BERTH_CHECK(options->nnodes == 1 || options->master_port != 0, "--nnodes ", options->nnodes,
                " needs --master-port: every node's launcher must give its workers the same port. Fix: pass ",
                "--master-port 29500 (the same on every node) and --master-addr <node 0's host>.");
    launch::validate(*options, *command);
    if (options->nnodes > 1 && options->master_addr == "127.0.0.1") {
      std::cerr << "berth launch: note: --master-addr 127.0.0.1 with --nnodes " << options->nnodes
                << " works only when every node is this machine; pass --master-addr <node 0's host>\n";
    }
    return launch::launch(*options, *command, std::cout, std::cerr);
  };
}

}  // namespace berth::cli
