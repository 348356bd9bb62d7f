// The CLI bad-input matrix: hostile arguments and files for train, eval, predict, tokenize, launch, export
// and data each exit 2 with what was expected and the fix, and leave no output or temporary file behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using testing::expect_contains;
using testing::run_cli;
using testing::TempDir;

struct BadInputCase {
  std::string name;
  std::string args;  // {D}: the case's own directory, {M}: the tiny BERT classifier
  std::vector<std::pair<std::string, std::string>> files;  // extra files for this case: name, content
  std::vector<std::string> fragments;                      // the message must contain each
  std::string absent = "{D}/out";                          // must not exist after the failure
};

const std::string kTrainRun = "train --model {M} --save-strategy no ";
const std::string kTrain = kTrainRun + "--train {D}/good.jsonl --max-length 32 ";
const std::string kTrainOut = kTrain + "--max-steps 1 --output-dir {D}/out ";
const std::string kTrainNoData = kTrainRun + "--max-length 32 --max-steps 1 --output-dir {D}/out ";
const std::string kEval = "eval --model {M} --test {D}/good.jsonl ";
const std::string kPredict = "predict --model {M} --input {D}/good.jsonl ";
const std::string kTokenize = "tokenize --tokenizer {M} --input {D}/good.jsonl ";
const std::string kFix = "Fix";

// Every case starts from these: data, a file and a directory where the other is expected, empty and binary
// files, text that is not UTF-8, a model whose config.json does not describe its weights.
void bad_input_write_common_files(const TempDir& dir) {
  std::ofstream(dir.file("good.jsonl")) << "{\"text\": \"free prize\", \"label\": \"spam\"}\n"
                                        << "{\"text\": \"meeting tomorrow\", \"label\": \"ham\"}\n";
  std::ofstream(dir.file("empty.jsonl")).flush();
  std::ofstream(dir.file("garbage.bin"), std::ios::binary) << std::string("\xa2\x01\xff\x9c{\x00\x80", 7);
  std::ofstream(dir.file("latin1.jsonl"), std::ios::binary)
      << "{\"text\": \"caf\xe9\", \"label\": \"spam\"}\n";
  std::ofstream(dir.file("afile")) << "hello\n";
  fs::create_directories(dir.file("adir"));
  fs::create_directories(dir.file("adir.jsonl"));
  // hidden_size 48 against the checkpoint's 32-wide weights (4 heads divide both).
  fs::copy(testing::tiny_bert_classifier_dir(), dir.file("wide"));
  std::ifstream in(dir.file("wide/config.json"));
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  config.replace(config.find("\"hidden_size\": 32"), 17, "\"hidden_size\": 48");
  std::ofstream(dir.file("wide/config.json"), std::ios::trunc) << config;
}

std::string bad_input_expand(std::string text, const TempDir& dir) {
  for (size_t at; (at = text.find("{D}")) != std::string::npos;) text.replace(at, 3, dir.path().string());
  for (size_t at; (at = text.find("{M}")) != std::string::npos;)
    text.replace(at, 3, testing::tiny_bert_classifier_dir());
  return text;
}

// Names under `root` that a writer leaves while it works (write_file_atomically's .tmp-, export's
// .tmp-export-).
std::vector<std::string> bad_input_temporaries(const fs::path& root) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.path().filename().string().find(".tmp") != std::string::npos) found.push_back(entry.path());
  return found;
}

std::vector<BadInputCase> train_cases() {
  return {
      {"train_output_dir_is_a_file",
       kTrain + "--max-steps 1 --output-dir {D}/afile",
       {},
       {"--output_dir", "expected a directory", "found an existing file", kFix}},
      {"train_output_dir_under_a_file",
       kTrain + "--max-steps 1 --output-dir {D}/afile/run",
       {},
       {"--output_dir", "afile is a file, not a directory", kFix},
       "{D}/afile/run"},
      {"train_max_steps_negative",
       kTrain + "--output-dir {D}/out --max-steps -5",
       {},
       {"max_steps must be -1", "found -5", kFix}},
      {"train_learning_rate_nan",
       kTrainOut + "--learning-rate nan",
       {},
       {"--learning_rate", "expects a finite number, found 'nan'", kFix}},
      {"train_batch_size_zero",
       kTrainOut + "--per-device-train-batch-size 0",
       {},
       {"per_device_train_batch_size must be >= 1, found 0", kFix}},
      {"train_batch_size_huge",
       kTrainOut + "--per-device-train-batch-size 99999999999999999999",
       {},
       {"per_device_train_batch_size expects a whole number", kFix}},
      {"train_epochs_infinite",
       kTrain + "--output-dir {D}/out --num-train-epochs inf",
       {},
       {"num_train_epochs expects a finite number", kFix}},
      {"train_warmup_ratio_above_one",
       kTrainOut + "--warmup-ratio 2",
       {},
       {"warmup_ratio must be in [0, 1], found 2", kFix}},
      {"train_accumulation_zero",
       kTrainOut + "--gradient-accumulation-steps 0",
       {},
       {"gradient_accumulation_steps must be >= 1", kFix}},
      {"train_logging_steps_negative",
       kTrainOut + "--logging-steps -1",
       {},
       {"logging_steps must be >= 0", kFix}},
      {"train_misspelled_flag",
       kTrainOut + "--lerning-rate 1e-3",
       {},
       {"unknown flag --lerning-rate", "did you mean --learning_rate?", kFix}},
      {"train_unimplemented_hf_flag",
       kTrainOut + "--dataloader-num-workers 2",
       {},
       {"HF's training arguments that berth does not implement", kFix}},
      {"train_empty_train_file", kTrainNoData + "--train {D}/empty.jsonl", {}, {"no examples found", kFix}},
      {"train_binary_train_file",
       kTrainNoData + "--train {D}/garbage.bin",
       {},
       {"cannot tell the format from the extension", kFix}},
      {"train_train_not_utf8", kTrainNoData + "--train {D}/latin1.jsonl", {}, {"ill-formed UTF-8", kFix}},
      {"train_train_is_a_directory",
       kTrainNoData + "--train {D}/adir.jsonl",
       {},
       {"adir.jsonl: expected a file, found a directory", kFix}},
      {"train_train_missing", kTrainNoData + "--train {D}/nothing.jsonl", {}, {"nothing.jsonl", kFix}},
      {"train_model_is_a_file",
       "train --model {D}/afile --train {D}/good.jsonl --output-dir {D}/out",
       {},
       {"afile is a file, not a directory", kFix}},
      {"train_model_without_tokenizer",
       "train --model {D}/adir --train {D}/good.jsonl --output-dir {D}/out",
       {},
       {"holds neither tokenizer.json nor vocab.txt", kFix}},
      {"train_args_binary", kTrainOut + "--args {D}/garbage.bin", {}, {"is not valid JSON", kFix}},
      {"train_args_empty", kTrainOut + "--args {D}/empty.jsonl", {}, {"is not valid JSON", kFix}},
      {"train_args_directory",
       kTrainOut + "--args {D}/adir",
       {},
       {"--args", "{D}/adir: expected a file, found a directory", kFix}},
      {"train_deepspeed_directory",
       kTrainOut + "--deepspeed {D}/adir",
       {},
       {"--deepspeed config", "expected a file, found a directory", kFix}},
      {"train_deepspeed_binary", kTrainOut + "--deepspeed {D}/garbage.bin", {}, {"is not valid JSON", kFix}},
      {"train_deepspeed_missing",
       kTrainOut + "--deepspeed {D}/ds.json",
       {},
       {"--deepspeed config", "found nothing at that path", kFix}},
      {"train_hp_search_directory",
       kTrainOut + "--hp-search {D}/adir",
       {},
       {"--hp-search", "expected a file, found a directory", kFix}},
      {"train_hp_search_binary", kTrainOut + "--hp-search {D}/garbage.bin", {}, {"is not valid JSON", kFix}},
      {"train_resume_from_a_file",
       kTrainOut + "--resume-from-checkpoint {D}/afile",
       {},
       {"expected a checkpoint directory, found a file", kFix},
       "{D}/out/model.safetensors"},
      {"train_resume_from_empty_dir",
       kTrainOut + "--resume-from-checkpoint {D}/adir",
       {},
       {"expected a checkpoint holding trainer_state.json", kFix},
       "{D}/out/model.safetensors"},
      {"train_block_size_for_a_classifier",
       kTrainOut + "--block-size 8",
       {},
       {"--block-size packs texts", kFix}},
      {"train_tokenizer_missing", kTrainOut + "--tokenizer {D}/nothing", {}, {"does not exist", kFix}},
      {"train_device_unknown",
       kTrainOut + "--device bogus",
       {},
       {"invalid device 'bogus'", "expected one of"}},
      {"train_text_column_missing",
       kTrainOut + "--text-column body",
       {},
       {"missing \"body\" (found keys: label, text)", kFix}},
      {"train_nproc_zero", kTrainOut + "--nproc-per-node 0", {}, {"starts no worker", kFix}},
      {"train_unknown_preset",
       "train --model-preset nope --tokenizer {M} --train {D}/good.jsonl --output-dir {D}/out",
       {},
       {"unknown model preset \"nope\"", kFix}},
      {"train_task_unknown", kTrainOut + "--task summarization", {}, {"unknown task", kFix}},
      {"train_max_length_over_the_model",
       kTrainRun + "--train {D}/good.jsonl --max-steps 1 --output-dir {D}/out --max-length 100",
       {},
       {"exceeds the model's max_position_embeddings (64)", kFix}},
      {"train_config_does_not_fit_the_weights",
       "train --model {D}/wide --train {D}/good.jsonl --max-length 32 --max-steps 1 --output-dir {D}/out",
       {},
       {"do not fit BertForSequenceClassification built from config.json",
        "bert.embeddings.word_embeddings.weight: checkpoint has [180, 32], the model expects [180, 48]",
        "more", "Fix: config.json does not describe these weights"}},  // not even training_args.json
      {"train_checkpointing_aliases_disagree",
       kTrainOut + "--gradient_checkpointing true --activation_checkpointing false",
       {},
       {"--gradient_checkpointing true and --activation_checkpointing false disagree",
        "two names of one setting", "Fix: give one of them"}},
      {"train_checkpointing_kwargs_aliases_disagree",
       kTrainOut +
           "--gradient_checkpointing_kwargs '{\"every_n_layers\": 2}' --activation_checkpointing_kwargs "
           "'{\"every_n_layers\": 1}'",
       {},
       {"--gradient_checkpointing_kwargs", "and --activation_checkpointing_kwargs", "disagree",
        "Fix: give one of them"}},
      {"train_config_does_not_fit_the_weights_in_a_search",
       "train --model {D}/wide --train {D}/good.jsonl --eval {D}/good.jsonl --max-length 32 --max-steps 1 "
       "--output-dir {D}/out --hp-search {D}/space.json --n-trials 1",
       {{"space.json", "{\"learning_rate\": [1e-4]}"}},
       {"do not fit BertForSequenceClassification", "Fix: config.json does not describe these weights"}},
  };
}

// The numbers and choices of train's own flags (not the training arguments'): negative counts, zero where it
// counts nothing, out-of-range shares, unknown choices.
std::vector<BadInputCase> train_number_cases() {
  return {
      {"train_n_trials_negative",
       kTrainOut + "--n-trials -3",
       {},
       {"--n-trials", "expected a whole number >= 0, found '-3'", kFix}},
      {"train_n_trials_zero_random",
       kTrainOut + "--hp-search {D}/space.json --n-trials 0",
       {{"space.json", "{\"learning_rate\": [1e-4, 1e-3]}"}},
       {"--n-trials 0 runs no trial of a random search", kFix}},
      {"train_early_stopping_patience_negative",
       kTrainOut + "--early-stopping-patience -1",
       {},
       {"--early-stopping-patience", "expected a whole number >= 0, found '-1'", kFix}},
      {"train_early_stopping_threshold_negative",
       kTrainOut + "--early-stopping-threshold -0.5",
       {},
       {"--early-stopping-threshold", "expected a number >= 0, found '-0.5'", kFix}},
      {"train_early_stopping_threshold_nan",
       kTrainOut + "--early-stopping-threshold nan",
       {},
       {"--early-stopping-threshold", "found 'nan'", kFix}},
      {"train_block_size_negative",
       kTrainOut + "--block-size -1",
       {},
       {"--block-size", "expected a whole number >= 0, found '-1'", kFix}},
      {"train_mlm_probability_above_one",
       kTrainOut + "--mlm-probability 1.5",
       {},
       {"--mlm-probability", "expected a number from 0 to 1, found '1.5'", kFix}},
      {"train_hp_method_unknown",
       kTrainOut + "--hp-method bayes",
       {},
       {"--hp-method", "expected one of random, grid, found 'bayes'", kFix}},
      {"train_direction_unknown",
       kTrainOut + "--direction up",
       {},
       {"--direction", "expected one of maximize, minimize, found 'up'", kFix}},
      {"train_split_seed_negative",
       kTrainOut + "--split-seed -1",
       {},
       {"--split-seed", "expected a whole number >= 0, found '-1'", kFix}},
      {"train_doc_stride_negative",
       kTrainOut + "--doc-stride -1",
       {},
       {"--doc-stride", "expected a whole number >= 0, found '-1'", kFix}},
      {"train_n_best_size_zero",
       kTrainOut + "--n-best-size 0",
       {},
       {"--n-best-size", "expected a whole number >= 1, found '0'", kFix}},
      {"train_max_answer_length_negative",
       kTrainOut + "--max-answer-length -2",
       {},
       {"--max-answer-length", "expected a whole number >= 1, found '-2'", kFix}},
  };
}

std::vector<BadInputCase> eval_predict_cases() {
  return {
      {"eval_output_is_a_directory",
       kEval + "--output {D}/adir",
       {},
       {"--output", "expected a file to write, found a directory", kFix}},
      {"eval_output_under_a_file",
       kEval + "--output {D}/afile/metrics.json",
       {},
       {"its folder", "is not a directory", kFix}},
      {"eval_output_folder_missing",
       kEval + "--output {D}/out/metrics.json",
       {},
       {"does not exist", "mkdir -p", kFix}},
      {"eval_batch_size_zero", kEval + "--batch-size 0", {}, {"--batch-size must be at least 1", kFix}},
      {"eval_batch_size_negative",
       kEval + "--batch-size -1",
       {},
       {"expected a whole number >= 0, found '-1'", kFix}},
      {"eval_max_length_over_the_model",
       kEval + "--max-length 100000",
       {},
       {"--max-length 100000 exceeds the model's max_position_embeddings (64)", kFix}},
      {"eval_empty_test_file", "eval --model {M} --test {D}/empty.jsonl", {}, {"no examples found", kFix}},
      {"eval_test_is_a_directory",
       "eval --model {M} --test {D}/adir.jsonl",
       {},
       {"expected a file, found a directory", kFix}},
      {"eval_model_is_a_file",
       "eval --model {D}/afile --test {D}/good.jsonl",
       {},
       {"is a file, not a directory", kFix}},
      {"eval_task_unknown", kEval + "--task nope", {}, {"unknown task \"nope\"", kFix}},
      {"eval_split_unknown",
       "eval --model {M} --data spamassassin --split dev",
       {},
       {"--split", "expected one of test, validation, eval, train, found 'dev'", kFix}},
      {"eval_data_unknown", "eval --model {M} --data imdb", {}, {"--data", "found 'imdb'", kFix}},
      {"eval_mlm_probability_negative",
       kEval + "--mlm-probability -0.1",
       {},
       {"--mlm-probability", "expected a number from 0 to 1, found '-0.1'", kFix}},
      {"predict_top_k_negative",
       kPredict + "--top-k -5",
       {},
       {"--top-k", "expected a whole number >= 0, found '-5'", kFix}},
      {"predict_max_new_tokens_zero",
       kPredict + "--max-new-tokens 0",
       {},
       {"--max-new-tokens", "expected a whole number >= 1, found '0'", kFix}},
      {"eval_config_does_not_fit_the_weights",
       "eval --model {D}/wide --test {D}/good.jsonl",
       {},
       {"do not fit", "the model expects [180, 48]", "Fix: config.json does not describe these weights"}},
      {"predict_input_is_a_directory",
       "predict --model {M} --input {D}/adir",
       {},
       {"--input", "expected a file, found a directory", kFix}},
      {"predict_input_empty",
       "predict --model {M} --input {D}/empty.jsonl",
       {},
       {"found no line with text", kFix}},
      {"predict_input_binary", "predict --model {M} --input {D}/garbage.bin", {}, {"not valid UTF-8", kFix}},
      {"predict_input_not_json",
       "predict --model {M} --input {D}/afile",
       {},
       {"afile:1: not valid JSON", "Expected one object per line"}},
      {"predict_input_without_text",
       "predict --model {M} --input {D}/rows.jsonl",
       {{"rows.jsonl", "{\"body\": \"x\"}\n"}},
       {"rows.jsonl:1: expected an object with a string \"text\""}},
      {"predict_input_missing",
       "predict --model {M} --input {D}/nothing.jsonl",
       {},
       {"found nothing at that path", kFix}},
      {"predict_output_is_a_directory",
       kPredict + "--output {D}/adir",
       {},
       {"expected a file to write, found a directory", kFix}},
      {"predict_output_under_a_file",
       kPredict + "--output {D}/afile/p.jsonl",
       {},
       {"is not a directory", kFix}},
      {"predict_batch_size_zero", kPredict + "--batch-size 0", {}, {"--batch-size must be at least 1"}},
      {"predict_batch_size_negative",
       kPredict + "--batch-size -3",
       {},
       {"expected a whole number >= 0, found '-3'", kFix}},
      {"predict_max_length_over_the_model",
       kPredict + "--max-length 100000",
       {},
       {"exceeds the model's max_position_embeddings (64)"}},
      {"predict_model_without_config",
       "predict --model {D}/adir --input {D}/good.jsonl",
       {},
       {"the model config {D}/adir/config.json: expected a file, found nothing at that path", kFix}},
      {"predict_task_unknown", kPredict + "--task nope", {}, {"unknown task \"nope\"", kFix}},
      {"predict_config_does_not_fit_the_weights",
       "predict --model {D}/wide --input {D}/good.jsonl",
       {},
       {"do not fit", "the model expects [180, 48]", "Fix: config.json does not describe these weights"}},
  };
}

std::vector<BadInputCase> tool_cases() {
  return {
      {"tokenize_input_is_a_directory",
       "tokenize --tokenizer {M} --input {D}/adir",
       {},
       {"expected a file, found a directory", kFix}},
      {"tokenize_input_empty",
       "tokenize --tokenizer {M} --input {D}/empty.jsonl",
       {},
       {"found no line with text", kFix}},
      {"tokenize_input_not_utf8",
       "tokenize --tokenizer {M} --input {D}/latin1.jsonl",
       {},
       {"latin1.jsonl:1: text is not valid UTF-8", "iconv", kFix}},
      {"tokenize_output_is_a_directory",
       kTokenize + "--output {D}/adir",
       {},
       {"expected a file to write, found a directory", kFix}},
      {"tokenize_output_folder_missing",
       kTokenize + "--output {D}/out/t.jsonl",
       {},
       {"does not exist", "mkdir -p", kFix}},
      {"tokenize_max_length_negative",
       kTokenize + "--truncation --max-length -1",
       {},
       {"--max-length", "expected a whole number >= 0, found '-1'", kFix}},
      {"tokenize_max_length_too_short",
       kTokenize + "--truncation longest_first --max-length 1",
       {},
       {"leaves no room for the 2 special tokens", kFix}},
      {"tokenize_tokenizer_is_a_file",
       "tokenize --tokenizer {D}/afile --input {D}/good.jsonl",
       {},
       {"is a file, not a directory", kFix}},
      {"tokenize_tokenizer_without_files",
       "tokenize --tokenizer {D}/adir --input {D}/good.jsonl",
       {},
       {"holds neither tokenizer.json nor vocab.txt", kFix}},
      {"launch_nproc_negative", "launch --nproc-per-node -3 -- true", {}, {"starts no worker", kFix}},
      {"launch_nproc_huge",
       "launch --nproc-per-node 99999999999 -- true",
       {},
       {"is not a number of workers", kFix}},
      {"launch_port_out_of_range", "launch --master-port 70000 -- true", {}, {"is not a TCP port", kFix}},
      {"launch_restarts_negative", "launch --max-restarts -2 -- true", {}, {"is negative", kFix}},
      {"launch_stop_grace_nan",
       "launch --stop-grace nan -- true",
       {},
       {"--stop-grace nan is not a number of seconds >= 0", kFix}},
      {"launch_command_is_a_directory", "launch -- {D}/adir", {}, {"is not an executable file", kFix}},
      {"launch_command_missing", "launch -- {D}/nothing", {}, {"is not an executable file", kFix}},
      {"launch_device_empty_entry", "launch --device cpu,,cpu -- true", {}, {"has an empty entry", kFix}},
      {"launch_no_command", "launch --nproc-per-node 2", {}, {"no command to launch", kFix}},
      {"export_checkpoint_is_a_file",
       "export --checkpoint {D}/afile --output {D}/out",
       {},
       {"no such directory", kFix}},
      {"export_checkpoint_without_config",
       "export --checkpoint {D}/adir --output {D}/out",
       {},
       {"expected a checkpoint directory with config.json", kFix}},
      {"export_output_is_a_file",
       "export --checkpoint {M} --output {D}/afile",
       {},
       {"found an existing file", kFix}},
      {"export_output_under_a_file",
       "export --checkpoint {M} --output {D}/afile/model",
       {},
       {"afile is a file, not a directory", kFix},
       "{D}/afile/model"},
      {"export_output_empty", "export --checkpoint {M} --output ''", {}, {"--output is empty", kFix}},
      {"export_output_is_the_checkpoint",
       "export --checkpoint {D}/wide --output {D}/wide --overwrite",
       {},
       {"is the checkpoint itself", kFix}},
      {"data_output_is_a_file", "data spamassassin --output {D}/afile", {}, {"found an existing file", kFix}},
      {"data_output_under_a_file",
       "data spamassassin --output {D}/afile/split",
       {},
       {"afile is a file, not a directory", kFix},
       "{D}/afile/split"},
  };
}

TEST(BadInputMatrix, EveryCaseExitsTwoNamesTheFixAndLeavesNothingBehind) {
  std::vector<BadInputCase> cases = train_cases();
  for (auto more : {train_number_cases(), eval_predict_cases(), tool_cases()})
    cases.insert(cases.end(), more.begin(), more.end());
  ASSERT_GE(cases.size(), 60u);
  for (const BadInputCase& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    bad_input_write_common_files(dir);
    for (const auto& [name, content] : c.files) std::ofstream(dir.file(name)) << content;
    const auto result = run_cli(bad_input_expand(c.args, dir));
    EXPECT_EQ(result.exit_code, 2) << result.output;
    std::vector<std::string> fragments;
    for (const std::string& fragment : c.fragments) fragments.push_back(bad_input_expand(fragment, dir));
    expect_contains(result.output, fragments);
    EXPECT_FALSE(fs::exists(bad_input_expand(c.absent, dir))) << "a refused run wrote its output";
    EXPECT_EQ(bad_input_temporaries(dir.path()), std::vector<std::string>{});
  }
}

}  // namespace
}  // namespace berth
