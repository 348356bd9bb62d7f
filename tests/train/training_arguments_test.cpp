// Tests for TrainingArguments: HF's defaults, text and JSON parsing, validation messages, HF's own JSON file.
#include "berth/train/training_arguments.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "berth/train/unsupported_hf_arguments.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

std::string fixture(const std::string& name) {
  return berth::testing::source_dir() + "/tests/train/fixtures/" + name;
}

TrainingArguments with(std::initializer_list<std::pair<const char*, const char*>> settings) {
  TrainingArguments args;
  for (const auto& [name, value] : settings) set_training_argument(args, name, value);
  return args;
}

std::string validation_error(std::initializer_list<std::pair<const char*, const char*>> settings) {
  const TrainingArguments args = with(settings);
  return error_text([&] { args.validate(); });
}

TEST(TrainingArgumentsTest, DefaultsAreHfsAndValid) {
  const TrainingArguments args;
  EXPECT_EQ(args.num_train_epochs, 3.0);
  EXPECT_EQ(args.max_steps, -1);
  EXPECT_EQ(args.per_device_train_batch_size, 8);
  EXPECT_EQ(args.learning_rate, 5e-5);
  EXPECT_EQ(args.adam_beta2, 0.999);
  EXPECT_EQ(args.adam_epsilon, 1e-8);
  EXPECT_EQ(args.lr_scheduler_type, "linear");
  EXPECT_EQ(args.logging_steps, 500);
  EXPECT_EQ(args.eval_strategy, "no");
  EXPECT_EQ(args.save_strategy, "steps");
  EXPECT_EQ(args.save_steps, 500);
  EXPECT_EQ(args.seed, 42);
  EXPECT_FALSE(args.eval_steps.has_value());
  EXPECT_FALSE(
      args.max_length.has_value());  // unset: what the model and tokenizer allow (resolve_max_length)
  EXPECT_NO_THROW(args.validate());
}

TEST(TrainingArgumentsTest, SpecsListEveryJsonKeyOnceWithDefaults) {
  const auto json = nlohmann::json::parse(TrainingArguments().to_json_text());
  const auto& specs = training_argument_specs();
  EXPECT_EQ(specs.size(), json.size());
  for (const ArgumentSpec& spec : specs) {
    EXPECT_TRUE(json.contains(spec.name)) << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    // The default text reads back to the default: set_training_argument(default_text) changes nothing.
    TrainingArguments args;
    if (!spec.default_text.empty()) set_training_argument(args, spec.name, spec.default_text);
    EXPECT_EQ(args.to_json_text(), TrainingArguments().to_json_text()) << spec.name;
  }
  const auto find = [&](const std::string& name) {
    for (const auto& spec : specs)
      if (spec.name == name) return spec;
    return ArgumentSpec{};
  };
  EXPECT_EQ(find("learning_rate").type, "float");
  EXPECT_EQ(find("learning_rate").default_text, "5e-05");
  EXPECT_EQ(find("eval_steps").type, "float?");
  EXPECT_EQ(find("report_to").type, "list");
  EXPECT_EQ(find("overwrite_output_dir").default_text, "false");
}

TEST(TrainingArgumentsTest, SetParsesTextByType) {
  const TrainingArguments args = with({{"max_steps", "10"},
                                       {"learning_rate", "2e-5"},
                                       {"overwrite_output_dir", "YES"},
                                       {"dataloader_drop_last", "1"},
                                       {"report_to", " jsonl , none "},
                                       {"eval_steps", "0.25"},
                                       {"save_total_limit", "3"},
                                       {"greater_is_better", "no"},
                                       {"evaluation_strategy", "epoch"}});
  EXPECT_EQ(args.max_steps, 10);
  EXPECT_EQ(args.learning_rate, 2e-5);
  EXPECT_TRUE(args.overwrite_output_dir);
  EXPECT_TRUE(args.dataloader_drop_last);
  EXPECT_EQ(args.report_to, (std::vector<std::string>{"jsonl", "none"}));
  EXPECT_EQ(args.eval_steps, 0.25);
  EXPECT_EQ(args.save_total_limit, 3);
  EXPECT_EQ(args.greater_is_better, false);
  EXPECT_EQ(args.eval_strategy, "epoch");  // HF's old name is an alias
  TrainingArguments unset = args;
  set_training_argument(unset, "save_total_limit", "none");
  EXPECT_FALSE(unset.save_total_limit.has_value());
}

TEST(TrainingArgumentsTest, SetRejectsMalformedTextNamingTheField) {
  TrainingArguments args;
  expect_contains(error_text([&] { set_training_argument(args, "max_steps", "ten"); }),
                  {"max_steps", "a whole number", "'ten'", "Fix: e.g. max_steps 10"});
  expect_contains(error_text([&] { set_training_argument(args, "max_steps", "1.5"); }),
                  {"max_steps", "'1.5'"});
  expect_contains(error_text([&] { set_training_argument(args, "learning_rate", "fast"); }),
                  {"learning_rate", "a finite number", "'fast'"});
  expect_contains(error_text([&] { set_training_argument(args, "learning_rate", "nan"); }),
                  {"learning_rate"});
  expect_contains(error_text([&] { set_training_argument(args, "disable_tqdm", "maybe"); }),
                  {"disable_tqdm", "true/false/1/0/yes/no", "'maybe'"});
}

TEST(TrainingArgumentsTest, UnknownNamesSuggestTheClosest) {
  TrainingArguments args;
  expect_contains(error_text([&] { set_training_argument(args, "learning_rat", "1"); }),
                  {"unknown training argument 'learning_rat'", "did you mean 'learning_rate'?", "Fix:"});
  expect_contains(error_text([&] { set_training_argument(args, "per_device_batch_size", "1"); }),
                  {"did you mean 'per_device_eval_batch_size'?"});
  const std::string far = error_text([&] { set_training_argument(args, "zzzzzzzz", "1"); });
  expect_contains(far, {"'zzzzzzzz'"});
  EXPECT_FALSE(berth::testing::contains(far, "did you mean"));
  // On the command line an HF field berth lacks is an error, not silently dropped.
  expect_contains(error_text([&] { set_training_argument(args, "fp16_opt_level", "O2"); }),
                  {"'fp16_opt_level'", "HF's that berth does not implement"});
  expect_contains(error_text([&] { set_training_argument(args, "report_to", "wandb"); }),
                  {"report_to", "no wandb integration", "jsonl"});
}

TEST(TrainingArgumentsTest, ValidationRulesNameFieldValueAndRule) {
  expect_contains(validation_error({{"learning_rate", "-1"}}), {"learning_rate", ">= 0", "-1"});
  EXPECT_NO_THROW(with({{"learning_rate", "0"}}).validate());  // HF allows 0 (frozen weights)
  expect_contains(validation_error({{"weight_decay", "-0.1"}}), {"weight_decay", ">= 0", "-0.1"});
  expect_contains(validation_error({{"adam_beta1", "1"}}), {"adam_beta1", "[0, 1)", "found 1"});
  expect_contains(validation_error({{"adam_beta2", "-0.5"}}), {"adam_beta2", "[0, 1)"});
  expect_contains(validation_error({{"adam_epsilon", "0"}}), {"adam_epsilon", "> 0"});
  expect_contains(validation_error({{"per_device_train_batch_size", "0"}}),
                  {"per_device_train_batch_size", ">= 1", "found 0"});
  expect_contains(validation_error({{"per_device_eval_batch_size", "-2"}}), {"per_device_eval_batch_size"});
  expect_contains(validation_error({{"gradient_accumulation_steps", "0"}}), {"gradient_accumulation_steps"});
  expect_contains(validation_error({{"warmup_ratio", "1.5"}}), {"warmup_ratio", "[0, 1]", "1.5"});
  expect_contains(validation_error({{"warmup_steps", "-1"}}), {"warmup_steps", ">= 0"});
  expect_contains(validation_error({{"max_steps", "0"}}), {"max_steps", "-1", "> 0", "found 0"});
  expect_contains(validation_error({{"num_train_epochs", "0"}}), {"num_train_epochs", "> 0", "max_steps"});
  EXPECT_NO_THROW(with({{"num_train_epochs", "0"}, {"max_steps", "5"}}).validate());
  expect_contains(validation_error({{"lr_scheduler_type", "cosine_restarts"}}),
                  {"lr_scheduler_type", "linear, cosine, constant, constant_with_warmup, polynomial",
                   "'cosine_restarts'"});
  expect_contains(validation_error({{"eval_strategy", "sometimes"}}), {"eval_strategy", "no, steps, epoch"});
  expect_contains(validation_error({{"save_strategy", "always"}}),
                  {"save_strategy", "steps, no, epoch, best"});
  expect_contains(validation_error({{"save_total_limit", "0"}}), {"save_total_limit", ">= 1"});
  expect_contains(validation_error({{"logging_steps", "12.5"}}), {"logging_steps", "whole number", "12.5"});
  expect_contains(validation_error({{"device", "gpu"}}), {"training argument device", "gpu"});
  expect_contains(validation_error({{"placement", "lazy"}}), {"training argument placement", "lazy"});
  expect_contains(validation_error({{"report_to", "jsonl,csv"}}),
                  {"report_to", "jsonl, tensorboard, none, all", "'csv'"});
  expect_contains(validation_error({{"max_length", "1"}}), {"max_length", ">= 2"});
  expect_contains(validation_error({{"max_length", "256"}, {"truncation_keep_head", "255"}}),
                  {"truncation_keep_head", "between 0 and max_length - 2 = 254", "found 255",
                   "truncation_keep_head 127"});
  expect_contains(validation_error({{"truncation_keep_head", "-1"}}), {"truncation_keep_head", "found -1"});
  EXPECT_NO_THROW(with({{"max_length", "256"}, {"truncation_keep_head", "254"}}).validate());
  EXPECT_NO_THROW(with({{"device", "cuda:1"}, {"placement", "strict"}}).validate());
}

TEST(TrainingArgumentsTest, EvalStepsDefaultToLoggingStepsAsHf) {
  const TrainingArguments args = with({{"eval_strategy", "steps"}, {"logging_steps", "20"}});
  EXPECT_NO_THROW(args.validate());
  EXPECT_EQ(args.resolved_eval_steps(1000), 20);
  expect_contains(
      validation_error({{"eval_strategy", "steps"}, {"logging_steps", "0"}, {"logging_strategy", "no"}}),
      {"eval_strategy=steps", "eval_steps > 0", "logging_steps", "Fix: e.g. eval_steps"});
  EXPECT_NO_THROW(with({{"eval_strategy", "steps"},
                        {"logging_steps", "0"},
                        {"logging_strategy", "no"},
                        {"eval_steps", "5"}})
                      .validate());
}

TEST(TrainingArgumentsTest, LoadBestModelAtEndNeedsMatchingStrategies) {
  expect_contains(validation_error({{"load_best_model_at_end", "true"}, {"eval_strategy", "epoch"}}),
                  {"load_best_model_at_end requires the save and eval strategy to match",
                   "eval_strategy 'epoch'", "save_strategy 'steps'"});
  expect_contains(validation_error({{"load_best_model_at_end", "true"},
                                    {"eval_strategy", "steps"},
                                    {"eval_steps", "300"},
                                    {"save_steps", "500"}}),
                  {"round multiple", "save_steps 500", "eval_steps 300"});
  EXPECT_NO_THROW(with({{"load_best_model_at_end", "true"},
                        {"eval_strategy", "steps"},
                        {"eval_steps", "250"},
                        {"save_steps", "500"}})
                      .validate());
  // Ratios compare exactly enough that 0.2 is a multiple of 0.1.
  EXPECT_NO_THROW(with({{"load_best_model_at_end", "true"},
                        {"eval_strategy", "steps"},
                        {"eval_steps", "0.1"},
                        {"save_steps", "0.2"}})
                      .validate());
  expect_contains(validation_error({{"load_best_model_at_end", "true"},
                                    {"eval_strategy", "steps"},
                                    {"eval_steps", "0.1"},
                                    {"save_steps", "100"}}),
                  {"both as ratios", "or both as step counts"});
  // save_strategy=best is exempt from matching (HF), and needs a metric (load_best_model_at_end gives loss).
  EXPECT_NO_THROW(
      with({{"load_best_model_at_end", "true"}, {"save_strategy", "best"}, {"eval_strategy", "epoch"}})
          .validate());
  expect_contains(validation_error({{"save_strategy", "best"}, {"eval_strategy", "epoch"}}),
                  {"save_strategy=best needs metric_for_best_model"});
}

TEST(TrainingArgumentsTest, ResolvedHelpersFollowHf) {
  TrainingArguments args;
  args.warmup_ratio = 0.1;
  EXPECT_EQ(args.resolved_warmup_steps(95), 10);  // ceil(9.5)
  args.warmup_steps = 7;
  EXPECT_EQ(args.resolved_warmup_steps(95), 7);  // warmup_steps > 0 wins
  args.logging_steps = 0.1;
  EXPECT_EQ(args.resolved_logging_steps(95), 10);
  args.logging_steps = 50;
  EXPECT_EQ(args.resolved_logging_steps(95), 50);
  args.save_steps = 0.5;
  EXPECT_EQ(args.resolved_save_steps(9), 5);

  EXPECT_FALSE(args.resolved_metric_for_best_model().has_value());
  expect_contains(error_text([&] { (void)args.best_metric_key(); }), {"metric_for_best_model is unset"});
  args.load_best_model_at_end = true;
  EXPECT_EQ(args.resolved_metric_for_best_model(), "loss");
  EXPECT_EQ(args.best_metric_key(), "eval_loss");
  EXPECT_FALSE(args.metric_greater_is_better());
  args.metric_for_best_model = "eval_f1";
  EXPECT_EQ(args.best_metric_key(), "eval_f1");
  EXPECT_TRUE(args.metric_greater_is_better());
  args.metric_for_best_model = "accuracy";
  EXPECT_EQ(args.best_metric_key(), "eval_accuracy");
  args.greater_is_better = false;
  EXPECT_FALSE(args.metric_greater_is_better());

  EXPECT_EQ(TrainingArguments().resolved_report_to(), std::vector<std::string>{"jsonl"});
  EXPECT_EQ(with({{"report_to", "all"}}).resolved_report_to(),
            (std::vector<std::string>{"jsonl", "tensorboard"}));
  EXPECT_EQ(with({{"report_to", "TensorBoard"}}).resolved_report_to(),
            std::vector<std::string>{"tensorboard"});
  EXPECT_TRUE(with({{"report_to", "tensorboard,none"}}).resolved_report_to().empty());
  EXPECT_TRUE(with({{"report_to", "none"}}).resolved_report_to().empty());
  EXPECT_EQ(with({{"seed", "5"}}).resolved_data_seed(), 5);
  EXPECT_EQ(with({{"seed", "5"}, {"data_seed", "9"}}).resolved_data_seed(), 9);
}

TEST(TrainingArgumentsTest, JsonRoundTripsEveryField) {
  TrainingArguments args = with({{"output_dir", "out/run \"1\""},
                                 {"learning_rate", "3e-5"},
                                 {"eval_strategy", "steps"},
                                 {"eval_steps", "0.2"},
                                 {"save_total_limit", "2"},
                                 {"metric_for_best_model", "f1"},
                                 {"greater_is_better", "true"},
                                 {"data_seed", "11"},
                                 {"resume_from_checkpoint", "latest"},
                                 {"report_to", "none"},
                                 {"device", "cpu"},
                                 {"threads", "3"}});
  const std::string text = args.to_json_text();
  const TrainingArguments back = TrainingArguments::from_json_text(text);
  EXPECT_EQ(back.to_json_text(), text);
  EXPECT_EQ(back.output_dir, "out/run \"1\"");
  EXPECT_EQ(back.eval_steps, 0.2);
  EXPECT_EQ(back.resume_from_checkpoint, "latest");
  // Sorted keys, two-space indent, as HF's to_json_string.
  EXPECT_EQ(text.substr(0, 38), "{\n  \"activation_checkpointing\": false,");
  const auto json = nlohmann::json::parse(text);
  EXPECT_TRUE(json["save_total_limit"].is_number_integer());
  EXPECT_TRUE(nlohmann::json::parse(TrainingArguments().to_json_text())["eval_steps"].is_null());

  berth::testing::TempDir dir;
  args.save(dir.file("training_args.json"));
  EXPECT_EQ(TrainingArguments::load(dir.file("training_args.json")).to_json_text(), text);
  expect_contains(error_text([&] { TrainingArguments::load(dir.file("missing.json")); }),
                  {"training arguments ", "missing.json: expected a file, found nothing at that path",
                   "Fix: pass a training_args.json"});
}

TEST(TrainingArgumentsTest, MergeOverridesOnlyPresentKeys) {
  TrainingArguments args = with({{"max_steps", "10"}, {"seed", "3"}});
  merge_training_arguments_json(args, R"({"seed": 5, "eval_steps": null, "report_to": "none"})", "a.json");
  EXPECT_EQ(args.max_steps, 10);
  EXPECT_EQ(args.seed, 5);
  EXPECT_EQ(args.report_to, std::vector<std::string>{"none"});
  merge_training_arguments_json(args, R"({"num_train_epochs": 2, "save_steps": 100.0, "max_steps": 20.0})",
                                "a.json");
  EXPECT_EQ(args.num_train_epochs, 2.0);  // an int where a float goes is fine
  EXPECT_EQ(args.max_steps, 20);          // and a whole float where an int goes, as Python writes them
}

TEST(TrainingArgumentsTest, JsonErrorsNameKeyExpectedTypeAndFound) {
  TrainingArguments args;
  expect_contains(
      error_text([&] { merge_training_arguments_json(args, R"({"learning_rate": "fast"})", "my.json"); }),
      {"my.json", "\"learning_rate\" must be a number", "found \"fast\""});
  expect_contains(
      error_text([&] { merge_training_arguments_json(args, R"({"max_steps": 1.5})", "my.json"); }),
      {"\"max_steps\" must be a whole number", "found 1.5"});
  expect_contains(
      error_text([&] { merge_training_arguments_json(args, R"({"disable_tqdm": "yes"})", "my.json"); }),
      {"\"disable_tqdm\" must be true or false"});
  expect_contains(
      error_text([&] { merge_training_arguments_json(args, R"({"report_to": [1]})", "my.json"); }),
      {"\"report_to\" must be a list of strings", "[1]"});
  // An unknown key in a file is a warning naming it (a file from another transformers version loads).
  std::vector<std::string> warnings;
  // An integration berth lacks, from HF's file, is dropped with a warning and jsonl takes its place.
  merge_training_arguments_json(args, R"({"report_to": ["wandb"]})", "my.json", &warnings);
  EXPECT_EQ(args.report_to, std::vector<std::string>{"jsonl"});
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0], {"report_to wandb ignored", "berth has no such integration"});
  warnings.clear();
  merge_training_arguments_json(args, R"({"learning_rte": 1})", "my.json", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0],
                  {"my.json: ignored 1 unknown key(s)", "learning_rte (did you mean 'learning_rate'?)"});
  expect_contains(error_text([&] { merge_training_arguments_json(args, "[1, 2]", "my.json"); }),
                  {"my.json must hold one JSON object", "array"});
  expect_contains(error_text([&] { merge_training_arguments_json(args, "{", "my.json"); }),
                  {"my.json is not valid JSON"});
}

TEST(TrainingArgumentsTest, ReadsHfsOwnTrainingArgsJsonWithOneWarning) {
  std::vector<std::string> warnings;
  const TrainingArguments args = TrainingArguments::load(fixture("hf_training_args.json"), &warnings);
  EXPECT_EQ(args.output_dir, "out/spam-bert");
  EXPECT_EQ(args.learning_rate, 2e-5);
  EXPECT_EQ(args.lr_scheduler_type, "cosine");
  EXPECT_EQ(args.per_device_train_batch_size, 16);
  EXPECT_EQ(args.gradient_accumulation_steps, 2);
  EXPECT_EQ(args.eval_strategy, "steps");
  EXPECT_EQ(args.eval_steps, 50.0);
  EXPECT_EQ(args.save_total_limit, 2);
  EXPECT_EQ(args.metric_for_best_model, "f1");
  EXPECT_EQ(args.seed, 7);
  EXPECT_EQ(args.warmup_ratio, 0.1);
  EXPECT_EQ(args.weight_decay, 0.01);
  // HF's tensorboard is berth's too; the HF-only keys are one line.
  EXPECT_EQ(args.report_to, std::vector<std::string>{"tensorboard"});
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0], {"HF training argument(s) berth does not implement", "fp16_backend, ",
                                "fp16_opt_level, ", "push_to_hub, ", "hub_strategy, "});
  // gradient_checkpointing is berth's own now.
  EXPECT_FALSE(berth::testing::contains(warnings[0], "gradient_checkpointing"));
  // fp16, bf16, deepspeed and fsdp are berth's own now: read, not ignored (HF writes fsdp as a list).
  EXPECT_FALSE(berth::testing::contains(warnings[0], "deepspeed"));
  EXPECT_FALSE(berth::testing::contains(warnings[0], "fp16, "));
  EXPECT_FALSE(berth::testing::contains(warnings[0], "fsdp, "));
  EXPECT_FALSE(args.fp16);
  EXPECT_FALSE(args.bf16);
  EXPECT_FALSE(args.deepspeed.has_value());
  EXPECT_EQ(args.fsdp, "");
  EXPECT_FALSE(berth::testing::contains(warnings[0], "learning_rate"));
  EXPECT_FALSE(
      berth::testing::contains(warnings[0], "_n_gpu"));  // HF's private fields are not worth a mention
}

TEST(TrainingArgumentsTest, PrecisionAndShardingArguments) {
  const TrainingArguments defaults;
  EXPECT_FALSE(defaults.fp16);
  EXPECT_FALSE(defaults.bf16);
  EXPECT_FALSE(defaults.deepspeed.has_value());
  EXPECT_EQ(defaults.fsdp, "");
  const TrainingArguments args = with({{"fp16", "true"}, {"fsdp", "full_shard offload"}});
  EXPECT_TRUE(args.fp16);
  EXPECT_EQ(args.fsdp, "full_shard offload");
  EXPECT_NO_THROW(args.validate());
  EXPECT_EQ(with({{"deepspeed", "ds.json"}}).deepspeed, std::optional<std::string>("ds.json"));
  expect_contains(validation_error({{"fp16", "true"}, {"bf16", "true"}}),
                  {"fp16 and bf16 are both true", "Fix:"});
  expect_contains(validation_error({{"deepspeed", "ds.json"}, {"fsdp", "full_shard"}}),
                  {"deepspeed ('ds.json') and fsdp ('full_shard') are both set", "Fix:"});
  expect_contains(validation_error({{"fsdp", "full_shard hybrid"}}),
                  {"training argument fsdp", "unknown fsdp option 'hybrid'"});
  expect_contains(validation_error({{"fsdp", "offload"}}),
                  {"training argument fsdp", "can't work on its own"});
  // JSON: HF writes fsdp as a list of options; deepspeed may be an inline object (its JSON text is kept).
  TrainingArguments from_json;
  merge_training_arguments_json(from_json,
                                R"({"fsdp": ["shard_grad_op", "offload"], "bf16": true,
                                    "deepspeed": {"zero_optimization": {"stage": 2}}})",
                                "hf.json");
  EXPECT_EQ(from_json.fsdp, "shard_grad_op offload");
  EXPECT_TRUE(from_json.bf16);
  ASSERT_TRUE(from_json.deepspeed.has_value());
  EXPECT_EQ(nlohmann::json::parse(*from_json.deepspeed)["zero_optimization"]["stage"], 2);
  // They round-trip through berth's own training_args.json.
  const auto round = TrainingArguments::from_json_text(args.to_json_text());
  EXPECT_TRUE(round.fp16);
  EXPECT_EQ(round.fsdp, "full_shard offload");
  const auto specs = training_argument_specs();
  for (const char* name : {"fp16", "bf16", "deepspeed", "fsdp"})
    EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [&](const ArgumentSpec& s) {
      return s.name == name;
    })) << name;
  const auto& ignored = unsupported_hf_training_arguments();
  for (const char* name : {"fp16", "bf16", "deepspeed", "fsdp"})
    EXPECT_EQ(std::find(ignored.begin(), ignored.end(), name), ignored.end()) << name;
}

TEST(TrainingArgumentsTest, OldEvaluationStrategyNameWinsWhenSetAsInHf) {
  TrainingArguments args;
  merge_training_arguments_json(args, R"({"evaluation_strategy": "epoch", "eval_strategy": "no"})",
                                "old.json");
  EXPECT_EQ(args.eval_strategy, "epoch");
  merge_training_arguments_json(args, R"({"evaluation_strategy": null, "eval_strategy": "steps"})",
                                "new.json");
  EXPECT_EQ(args.eval_strategy, "steps");
}

// Found by fuzz/training_args_fuzzer: training_args.json with 1e400 escaped as nlohmann's out_of_range, and
// a command-line value that is not UTF-8 was taken, then training_args.json could not be written
// (nlohmann's type_error 316 escaped from to_json_text).
TEST(TrainingArgumentsTest, NumberBeyondADoubleAndValuesNotUtf8AreRefusedWithTheFix) {
  expect_contains(
      error_text([] { TrainingArguments::from_json_text(R"({"learning_rate": 1e400})", "a.json"); }),
      {"a.json is not valid JSON", "number overflow parsing '1e400'", "Fix:"});
  TrainingArguments args;
  expect_contains(error_text([&] { set_training_argument(args, "output_dir", "out\x80put"); }),
                  {"training argument output_dir: expected UTF-8 text, found the byte 0x80 at byte 3",
                   "Fix: pass the value as UTF-8"});
  expect_contains(error_text([&] { set_training_argument(args, "output_dir", "\xed\xa0\x80"); }),
                  {"found the byte 0xED at byte 0"});  // a surrogate, which JSON cannot hold either
  set_training_argument(args, "output_dir", "caf\xc3\xa9");
  EXPECT_EQ(TrainingArguments::from_json_text(args.to_json_text()).output_dir, "caf\xc3\xa9");
}

}  // namespace
}  // namespace berth::train
