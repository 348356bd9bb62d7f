// libFuzzer target: a DeepSpeed JSON config as parse_deepspeed_config reads it and resolve/finalize fill it
// from TrainingArguments. Any input is refused with a berth::Error or gives a config inside DeepSpeed's
// ranges whose batch sizes multiply out once resolved.
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/training_arguments.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kTarget = "deepspeed_config_fuzzer";
using berth::train::DeepSpeedConfig;

void check_parsed(const DeepSpeedConfig& config) {
  berth_fuzz::require(config.zero.stage >= 0 && config.zero.stage <= 3, kTarget, "zero stage is 0-3");
  berth_fuzz::require(config.train_batch_size >= 0 && config.train_micro_batch_size_per_gpu >= 0 &&
                          config.gradient_accumulation_steps >= 0,
                      kTarget, "batch sizes are not negative");
}

void check_resolved(const std::string& text) {
  berth::train::TrainingArguments args;
  for (int64_t world : {int64_t{1}, int64_t{3}}) {
    std::vector<std::string> warnings;
    DeepSpeedConfig config;
    try {
      config = berth::train::resolve_deepspeed_config(text, args, world, &warnings);
      berth::train::fill_hidden_size_auto(config, int64_t{768});
      berth::train::finalize_deepspeed_config(config, args, 1000);
    } catch (const berth::Error&) {
      continue;
    }
    berth_fuzz::require(config.train_batch_size == config.train_micro_batch_size_per_gpu *
                                                       config.gradient_accumulation_steps * world,
                        kTarget, "resolved batch sizes multiply out");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = berth_fuzz::text_of(data, size);
  std::vector<std::string> warnings;
  DeepSpeedConfig config;
  try {
    config = berth::train::parse_deepspeed_config(text, "fuzz/ds_config.json", &warnings);
  } catch (const berth::Error&) {
    return 0;
  }
  check_parsed(config);
  // resolve reads a path unless the text starts with '{'; the fuzzer only hands it text.
  if (!text.empty() && text[0] == '{') check_resolved(text);
  return 0;
}
