// libFuzzer target: training_args.json as TrainingArguments reads it, and one command-line argument as
// set_training_argument reads it. Any input is refused with a berth::Error, or gives arguments whose JSON
// reads back to the same JSON, and whose resolved step counts are computed without overflow.
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/train/training_arguments.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kTarget = "training_args_fuzzer";
using berth::train::TrainingArguments;

void check_resolved(const TrainingArguments& args) {
  for (int64_t total : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1} << 40}) {
    try {
      berth_fuzz::require(args.resolved_warmup_steps(total) >= 0, kTarget, "warmup steps are not negative");
      (void)args.resolved_logging_steps(total);
      (void)args.resolved_eval_steps(total);
      (void)args.resolved_save_steps(total);
    } catch (const berth::Error&) {
    }
  }
  try {
    (void)args.best_metric_key();
  } catch (const berth::Error&) {
  }
  (void)args.resolved_report_to();
  (void)args.resolved_data_seed();
  (void)args.metric_greater_is_better();
}

void check_json(const std::string& text) {
  std::vector<std::string> warnings;
  TrainingArguments args;
  try {
    args = TrainingArguments::from_json_text(text, "fuzz/training_args.json", &warnings);
  } catch (const berth::Error&) {
    return;
  }
  check_resolved(args);
  const std::string written = args.to_json_text();
  const TrainingArguments again = TrainingArguments::from_json_text(written, "round trip");
  berth_fuzz::require(again.to_json_text() == written, kTarget, "written arguments read back the same");
}

// "name\nvalue": one argument as the command line gives it.
void check_argument(const std::string& input) {
  const auto [name, value] = berth_fuzz::split_two(input, "\n");
  // An unknown name costs an edit distance against every field's name (a "did you mean"): JSON text taken for
  // a name would only slow the fuzzer ten-fold; a command line's names are short words.
  if (name.size() > 40 || name.find('{') != std::string_view::npos) return;
  TrainingArguments args;
  try {
    berth::train::set_training_argument(args, name, value);
  } catch (const berth::Error&) {
    return;
  }
  try {
    args.validate();
  } catch (const berth::Error&) {
    return;
  }
  const std::string written = args.to_json_text();
  berth_fuzz::require(TrainingArguments::from_json_text(written, "round trip").to_json_text() == written,
                      kTarget, "an argument set from text reads back the same");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = berth_fuzz::text_of(data, size);
  check_json(text);
  check_argument(text);
  return 0;
}
