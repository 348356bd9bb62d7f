// `berth predict`: label every line of a JSONL file with a fine-tuned classifier, in input order.
#include <iostream>
#include <memory>

#include "berth/train/predict_job.h"
#include "command.h"
#include "count_flag.h"
#include "question_answering_flags.h"

namespace berth::cli {

CommandAction add_predict_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict",
                                 "Label each {\"text\", \"text_pair\"?} line of a JSONL file with a "
                                 "fine-tuned classifier, or continue it with a causal LM");
  auto options = std::make_shared<train::PredictJobOptions>();
  cmd->add_option("--model", options->model,
                  "HF model directory: config.json, model.safetensors, vocab.txt and/or tokenizer.json")
      ->required();
  cmd->add_option("--input", options->input, "JSONL file, one {\"text\": ..., \"text_pair\"?: ...} per line")
      ->required();
  cmd->add_option("--output", options->output,
                  "JSONL file for {\"label\", \"logits\", \"probabilities\"} lines (default: stdout)");
  cmd->add_option("--batch-size", options->predictor.batch_size, "Inputs per forward pass")
      ->check(whole_number("--batch-size 32"))
      ->capture_default_str();
  cmd->add_option("--max-length", options->predictor.max_length,
                  "Longest input in tokens; 0 = the length the model was trained at (its "
                  "training_args.json), else the model's limit (min of model_max_length and "
                  "max_position_embeddings)")
      ->check(whole_number("--max-length 128, or 0 for the model's own"))
      ->capture_default_str();
  cmd->add_option("--device", options->predictor.device, "auto, cpu, cuda or cuda:N")
      ->envname("BERTH_DEVICE")
      ->capture_default_str();
  GenerateOptions& generate = options->predictor.generate;
  cmd->add_option("--max-new-tokens", generate.max_new_tokens, "Causal LMs: tokens to generate per input")
      ->check(positive_whole_number("--max-new-tokens 20"))
      ->capture_default_str();
  cmd->add_flag("--do-sample", generate.do_sample,
                "Causal LMs: sample each token (temperature, top-k, top-p) instead of the most probable");
  cmd->add_option("--temperature", generate.temperature, "With --do-sample")->capture_default_str();
  cmd->add_option("--top-k", generate.top_k, "With --do-sample: keep the k most probable tokens (0: all)")
      ->check(whole_number("--top-k 50, or 0 to keep every token"))
      ->capture_default_str();
  cmd->add_option("--top-p", generate.top_p,
                  "With --do-sample: keep the most probable tokens up to this mass")
      ->capture_default_str();
  cmd->add_option("--seed", generate.seed, "With --do-sample: the sampling seed")->capture_default_str();
  cmd->add_option("--task", options->task,
                  "question-answering: the best answer span of each {\"question\", \"context\"} line; "
                  "token-classification: a label per word of each line (default: what the checkpoint's "
                  "architectures say)");
  add_question_answering_flags(*cmd, options->question_answering);
  return [options] {
    train::run_predict_job(*options, std::cout, std::cerr);
    return 0;
  };
}

}  // namespace berth::cli
