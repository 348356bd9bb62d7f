// The training arguments on the command line: one --flag per TrainingArguments field, plus --args FILE.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "berth/train/training_arguments.h"

namespace berth::cli {

// What add_training_flags binds: the text of each flag, and whether the command line gave it.
struct TrainingFlags {
  std::string args_file;                        // --args FILE: a JSON object of training arguments
  std::map<std::string, std::string> values;    // field name -> the text after its flag
  std::map<std::string, CLI::Option*> options;  // field name -> its option, to ask whether it was given
  CLI::App* command = nullptr;                  // for the arguments it did not recognize
};

// Declares every field of training_argument_specs() on `command` as --name (HF's spelling, e.g. --max_steps)
// and, for names with underscores, --name-with-dashes as a second name of the same option; the help shows
// the default. Bool flags take an optional value: --overwrite_output_dir alone means true. `flags` must
// outlive parsing.
void add_training_flags(CLI::App& command, TrainingFlags& flags);

// Unknown flags (the command allows extras for this) throw berth::Error naming the closest training argument.
// Defaults, then the JSON --args file (warnings for HF keys berth ignores go to *warnings), then the flags
// given on the command line, then validate(). Errors name the flag (--max_steps) or the file.
train::TrainingArguments resolve_training_arguments(const TrainingFlags& flags,
                                                    std::vector<std::string>* warnings = nullptr);

}  // namespace berth::cli
