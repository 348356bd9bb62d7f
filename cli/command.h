// How a berth subcommand plugs into the command line: declare its flags, then run.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "worker_argv.h"  // what `berth train --nproc-per-node N` makes of program_args()

namespace berth::cli {

// Each subcommand adds itself to the app and returns the action to run when it is chosen;
// the action returns the process exit code.
using CommandAction = std::function<int()>;

// The command line as main received it (`berth train --nproc-per-node N` re-runs it under the launcher).
const std::vector<std::string>& program_args();

CommandAction add_benchmark_command(CLI::App& app);
CommandAction add_doctor_command(CLI::App& app);
CommandAction add_predict_command(CLI::App& app);
CommandAction add_tokenize_command(CLI::App& app);
CommandAction add_tokenizer_command(CLI::App& app);
CommandAction add_data_command(CLI::App& app);
CommandAction add_train_command(CLI::App& app);
CommandAction add_eval_command(CLI::App& app);
CommandAction add_launch_command(CLI::App& app);
CommandAction add_estimate_memory_command(CLI::App& app);
CommandAction add_export_command(CLI::App& app);

}  // namespace berth::cli
