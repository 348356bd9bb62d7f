// The berth command: parses the command line and hands each subcommand to the library.
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "berth/config.h"
#include "berth/core/error.h"
#include "berth/core/process_defaults.h"
#include "berth/core/runtime.h"
#include "berth/doctor/doctor.h"
#include "command.h"

BERTH_PROCESS_DEFAULTS();

namespace {
std::vector<std::string> g_program_args;
}

const std::vector<std::string>& berth::cli::program_args() { return g_program_args; }

int main(int argc, char** argv) {
  g_program_args.assign(argv, argv + argc);
  CLI::App app{"berth: fine-tune BERT-family models on CPUs and GPUs, with every tensor in its right place"};
  app.set_version_flag("--version", berth::version_text());
  app.require_subcommand(1);
  berth::runtime::ThreadOptions threads;
  app.add_option(
         "--threads", threads.threads,
         "Intra-op and BLAS threads; 0 = OMP_NUM_THREADS if set, else automatic: BLAS gets every CPU, "
         "intra-op every CPU when OpenMP waits passively (berth's default) and 1 while it spins")
      ->envname("BERTH_THREADS")
      ->capture_default_str();

  // Each subcommand by its name, with what to run when it is chosen.
  const std::vector<std::pair<std::string, berth::cli::CommandAction>> commands = {
      {"benchmark", berth::cli::add_benchmark_command(app)},
      {"doctor", berth::cli::add_doctor_command(app)},
      {"predict", berth::cli::add_predict_command(app)},
      {"tokenize", berth::cli::add_tokenize_command(app)},
      {"tokenizer", berth::cli::add_tokenizer_command(app)},
      {"data", berth::cli::add_data_command(app)},
      {"train", berth::cli::add_train_command(app)},
      {"eval", berth::cli::add_eval_command(app)},
      {"launch", berth::cli::add_launch_command(app)},
      {"estimate-memory", berth::cli::add_estimate_memory_command(app)},
      {"export", berth::cli::add_export_command(app)},
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;  // usage errors share exit code 2 with every other bad input
  }
  try {
    berth::runtime::configure_threads(threads);
    for (const auto& [name, action] : commands)
      if (app.got_subcommand(name)) return action();
    return 2;
  } catch (const berth::Error& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 2;
  } catch (const berth::InternalError& e) {
    std::cerr << e.what() << std::endl;
    return 70;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
