// `berth predict`: label every line of a JSONL file with a fine-tuned classifier, in input order.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/core/output_path.h"
#include "berth/model/auto_model.h"
#include "berth/model/predictor.h"
#include "berth/model/pretrained_config.h"
#include "berth/train/encode_options.h"
#include "command.h"
#include "count_flag.h"
#include "question_answering_commands.h"
#include "question_answering_flags.h"
#include "tag_words.h"
#include "text_input.h"

namespace berth::cli {
namespace {

struct PredictCommandOptions {
  std::string model;
  std::string input;
  std::string output;  // empty: stdout
  PredictorOptions predictor;
  std::string task;  // empty: the checkpoint's architectures
  train::QuestionAnsweringOptions question_answering;
};

// --task, else what the checkpoint's architectures say.
ModelTask predict_task(const PredictCommandOptions& options) {
  if (!options.task.empty()) return parse_task(options.task);
  return default_task(PretrainedConfig::load(options.model + "/config.json"));
}

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json line;
  if (p.generated_text) {
    line["generated_text"] = *p.generated_text;
    line["generated_ids"] = p.generated_ids;
    return line;
  }
  if (p.value) {
    line["label"] = *p.value;
  } else {
    line["label"] = p.label;
  }
  if (p.multi_label) line["labels"] = p.labels;  // a single label has no list to print
  line["logits"] = p.logits;
  if (!p.probabilities.empty()) line["probabilities"] = p.probabilities;
  return line;
}

}  // namespace

CommandAction add_predict_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict",
                                 "Label each {\"text\", \"text_pair\"?} line of a JSONL file with a "
                                 "fine-tuned classifier, or continue it with a causal LM");
  auto options = std::make_shared<PredictCommandOptions>();
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
    // Before the model loads: a bad --output would otherwise fail only after every prediction.
    if (!options->output.empty()) check_output_file(options->output, "--output");
    const ModelTask task = predict_task(*options);
    if (task == ModelTask::QuestionAnswering)
      return run_question_answering_predict({options->model, options->input, options->output,
                                             options->predictor.batch_size, options->predictor.max_length,
                                             options->predictor.device, false, options->question_answering});
    // A token classifier labels words, not texts (tag_words.h).
    if (task == ModelTask::TokenClassification)
      return tag_words(options->model, options->input, options->output, options->predictor.device,
                       options->predictor.max_length);
    std::vector<tokenizer::EncodeInput> inputs = encode_inputs(read_text_inputs(options->input));
    // Inputs cut as the model learned them (berth train's training_args.json, when the dir has one).
    PredictorOptions predictor_options = options->predictor;
    if (auto trained = train::trained_encode_options(options->model)) {
      if (predictor_options.max_length == 0) predictor_options.max_length = trained->max_length;
      predictor_options.keep_head = trained->keep_head;
    }
    Predictor predictor = Predictor::load(options->model, predictor_options);
    for (const std::string& warning : predictor.load_report().warnings)
      std::cerr << "warning: " << warning << "\n";
    std::vector<Prediction> predictions = predictor.predict(inputs);
    auto write = [&](std::ostream& out) {
      for (const Prediction& p : predictions) out << prediction_json(p).dump() << "\n";
    };
    if (options->output.empty()) {
      write(std::cout);
      std::cout.flush();
    } else {
      write_file_atomically(options->output, write);
      std::cerr << "predict: " << predictions.size() << " predictions -> " << options->output << "\n";
    }
    return 0;
  };
}

}  // namespace berth::cli
