// The training arguments on the command line: flags declared from the field registry, resolved over a JSON
// file.
#include "training_flags.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/train/unsupported_hf_arguments.h"
#include "count_flag.h"

namespace berth::cli {

void add_training_flags(CLI::App& command, TrainingFlags& flags) {
  // Unknown flags reach resolve_training_arguments, which names the closest training argument.
  command.allow_extras();
  flags.command = &command;
  command
      .add_option("--args", flags.args_file,
                  "JSON file of training arguments (berth's or HF's training_args.json); flags override it")
      ->check(input_file("training arguments file"));
  for (const train::ArgumentSpec& spec : train::training_argument_specs()) {
    std::string names = "--" + spec.name;
    if (spec.name.find('_') != std::string::npos) {
      std::string dashed = spec.name;
      for (char& c : dashed)
        if (c == '_') c = '-';
      names += ",--" + dashed;
    }
    if (spec.name == "eval_strategy")
      names += ",--evaluation_strategy,--evaluation-strategy";  // HF's old name
    const std::string shown = spec.default_text.empty() ? "unset" : spec.default_text;
    CLI::Option* option = command.add_option(names, flags.values[spec.name],
                                             spec.help + " (" + spec.type + ", default: " + shown + ")");
    option->type_name(spec.type == "bool" ? "[BOOL]" : "");
    // HF's parser accepts a bare boolean flag (--overwrite_output_dir) as true.
    if (spec.type == "bool") option->expected(0, 1);
    flags.options[spec.name] = option;
  }
}

namespace {

// transformers 5's activation_checkpointing(_kwargs) and its older name gradient_checkpointing(_kwargs) set
// one field: given both on one command line, they must say the same (a JSON file is checked as it loads).
void check_alias_flags_agree(const TrainingFlags& flags) {
  for (const std::string suffix : {"", "_kwargs"}) {
    const std::string old_name = "gradient_checkpointing" + suffix;
    const std::string new_name = "activation_checkpointing" + suffix;
    const CLI::Option* old_flag = flags.options.at(old_name);
    const CLI::Option* new_flag = flags.options.at(new_name);
    if (old_flag->count() == 0 || new_flag->count() == 0) continue;
    auto value_of = [&](const std::string& name, const CLI::Option* option) {
      const std::string text = flags.values.at(name);
      return text.empty() && option->get_expected_min() == 0 ? std::string("true") : text;
    };
    train::TrainingArguments by_old, by_new;
    train::set_training_argument(by_old, old_name, value_of(old_name, old_flag));
    train::set_training_argument(by_new, new_name, value_of(new_name, new_flag));
    auto kwargs = [](const train::TrainingArguments& a) {  // spacing and key order aside
      return a.gradient_checkpointing_kwargs ? nlohmann::json::parse(*a.gradient_checkpointing_kwargs).dump()
                                             : std::string();
    };
    BERTH_CHECK(
        by_old.gradient_checkpointing == by_new.gradient_checkpointing && kwargs(by_old) == kwargs(by_new),
        "--", old_name, " ", value_of(old_name, old_flag), " and --", new_name, " ",
        value_of(new_name, new_flag),
        " disagree: they are two names of one setting (transformers 5 "
        "renamed ",
        old_name, " to ", new_name, "). Fix: give one of them");
  }
}

}  // namespace

train::TrainingArguments resolve_training_arguments(const TrainingFlags& flags,
                                                    std::vector<std::string>* warnings) {
  if (flags.command) {
    for (const std::string& extra : flags.command->remaining()) {
      if (extra.rfind("--", 0) != 0) continue;
      std::string name =
          extra.substr(2, extra.find('=') == std::string::npos ? std::string::npos : extra.find('=') - 2);
      for (char& c : name)
        if (c == '-') c = '_';
      BERTH_CHECK(!train::is_unsupported_hf_training_argument(name), "unknown flag ", extra, ": ", name,
                  " is one of HF's training arguments that berth does not implement. Fix: leave it out");
      const std::string suggestion = train::closest_training_argument(name);
      BERTH_FAIL("unknown flag ", extra,
                 suggestion.empty() ? std::string() : "; did you mean --" + suggestion + "?",
                 ". Fix: see --help for the training flags");
    }
    BERTH_CHECK(flags.command->remaining().empty(), "unexpected argument ",
                flags.command->remaining().front(), ". Fix: see --help for what this command takes");
  }
  train::TrainingArguments args;
  if (!flags.args_file.empty()) {
    const std::string text = read_input_file(flags.args_file, "--args", "pass a readable JSON file");
    train::merge_training_arguments_json(args, text, flags.args_file, warnings);
  }
  if (!flags.options.empty()) check_alias_flags_agree(flags);
  for (const auto& [name, option] : flags.options) {
    if (option->count() == 0) continue;
    std::string text = flags.values.at(name);
    if (text.empty() && option->get_expected_min() == 0) text = "true";
    try {
      train::set_training_argument(args, name, text);
    } catch (const Error& e) {
      BERTH_FAIL("--", name, ": ", e.what());
    }
  }
  try {
    args.validate();
  } catch (const Error& e) {
    BERTH_FAIL("invalid training arguments",
               flags.args_file.empty() ? "" : " (from --args " + flags.args_file + " and flags)", ": ",
               e.what());
  }
  return args;
}

}  // namespace berth::cli
