// How a berth subcommand plugs into the command line: declare its flags, then run.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace berth::cli {

// Each subcommand adds itself to the app and returns the action to run when it is chosen;
// the action returns the process exit code.
using CommandAction = std::function<int()>;

CommandAction add_benchmark_command(CLI::App& app);
CommandAction add_doctor_command(CLI::App& app);
CommandAction add_predict_command(CLI::App& app);
CommandAction add_tokenize_command(CLI::App& app);
CommandAction add_tokenizer_command(CLI::App& app);
CommandAction add_data_command(CLI::App& app);
CommandAction add_train_command(CLI::App& app);
CommandAction add_eval_command(CLI::App& app);

}  // namespace berth::cli
