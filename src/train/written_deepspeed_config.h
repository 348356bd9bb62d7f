// A DeepSpeed config as written, before TrainingArguments fill it: explicit values with "auto" and absent
// told apart, shared by parse_deepspeed_config and resolve_deepspeed_config (private to the library).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/train/deepspeed_config.h"

namespace berth::train::detail {

// Both precision blocks' "enabled" as written: nullopt when absent or "auto".
struct PrecisionFlags {
  std::optional<bool> fp16, bf16;
  bool fp16_auto = false, bf16_auto = false;
};

struct WrittenDeepSpeedConfig {
  // As parse_deepspeed_config returns it: "auto" and absent values at 0 or the block's defaults.
  DeepSpeedConfig config;
  // Batch sizes as written (nullopt: "auto" or absent; *_given: the key is there, "auto" included).
  std::optional<int64_t> train_batch_size, micro_batch, accumulation;
  bool train_batch_size_given = false, micro_batch_given = false, accumulation_given = false;
  std::optional<double> gradient_clipping;  // nullopt: "auto" (gradient_clipping_auto) or absent
  bool gradient_clipping_auto = false;
  PrecisionFlags precision;
  // Optimizer params as written (nullopt: auto or absent).
  std::optional<double> lr, beta1, beta2, eps, weight_decay;
  // Scheduler params as written (nullopt: auto or absent; config.scheduler's *_pending flags tell "auto").
  std::optional<double> warmup_max_lr, warmup_min_lr;
  std::optional<int64_t> warmup_num_steps, total_num_steps;
};

// Parses and checks `json_text` as parse_deepspeed_config documents it (`source` names it in messages;
// deprecation and unknown-key lines go to *warnings when given).
WrittenDeepSpeedConfig parse_written_deepspeed_config(const std::string& json_text, const std::string& source,
                                                      std::vector<std::string>* warnings);

}  // namespace berth::train::detail
