// `berth benchmark`: the flags of train::run_step_benchmark (timed training steps of a preset BERT on
// synthetic tokens, or forward passes with --inference), one JSON line out.
#include <iostream>
#include <memory>
#include <string>

#include "berth/train/step_benchmark.h"
#include "command.h"

namespace berth::cli {

CommandAction add_benchmark_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "benchmark",
      "Time full training steps (forward, backward, AdamW) of a preset BERT on synthetic tokens");
  auto options = std::make_shared<train::StepBenchmarkOptions>();
  cmd->add_option("--model-preset", options->preset, "bert-tiny, bert-mini, bert-small or bert-base")
      ->capture_default_str();
  cmd->add_option("--batch-size", options->batch_size, "Sequences per step")->capture_default_str();
  cmd->add_option("--seq-len", options->seq_len, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--steps", options->steps, "Timed steps (the medians are over these)")
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "Untimed steps first")->capture_default_str();
  cmd->add_option("--threads", options->threads,
                  "Intra-op and BLAS threads; 0 = berth's default (see berth --help)")
      ->capture_default_str();
  cmd->add_option("--vocab-size", options->vocab_size, "Vocabulary size of the synthetic model")
      ->capture_default_str();
  cmd->add_option("--bucket-cap-mb", options->bucket_cap_mb, "Under a launcher: DDP's gradient bucket size")
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the weights and the synthetic tokens")
      ->capture_default_str();
  cmd->add_flag("--bf16", options->bf16,
                "Forward and loss under bf16 autocast, fp32 weights and AdamW state (berth train --bf16)");
  cmd->add_option("--device", options->device, "cpu, cuda or cuda:N: where the model and the tokens are")
      ->capture_default_str();
  cmd->add_flag("--inference", options->inference,
                "Time forward passes only (no labels), in eval mode without grad, as berth eval runs them");
  return [options] {
    const std::string line = train::run_step_benchmark(*options);
    if (!line.empty()) std::cout << line << std::endl;  // rank 0's line; the others print nothing
    return 0;
  };
}

}  // namespace berth::cli
