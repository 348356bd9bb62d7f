// berth's TrainingArguments JSON loader on the training_args.json files HF transformers 5 writes (goldens
// from tests/goldens/training_args_goldens.py): every field both have reads as HF holds it, the rest is
// ignored with one warning line, and transformers 5's new spellings (fsdp null, warmup_steps as a ratio,
// train_sampling_strategy) mean what they mean in HF.
#include "berth/train/training_arguments.h"

#include <gtest/gtest.h>

#include "berth/train/unsupported_hf_arguments.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace berth::train {
namespace {

using Json = nlohmann::json;
using berth::testing::error_text;
using berth::testing::expect_contains;

std::string golden_path(const std::string& name) {
  return berth::testing::golden_dir() + "/training_args/" + name;
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) return Json();
  return Json::parse(in);
}

// The names in the loader's "ignored N HF training argument(s) berth does not implement: a, b" line.
std::set<std::string> ignored_names(const std::string& line) {
  std::set<std::string> names;
  const std::string marker = "does not implement: ";
  const std::size_t at = line.find(marker);
  if (at == std::string::npos) return names;
  std::stringstream list(line.substr(at + marker.size()));
  for (std::string name; std::getline(list, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    names.insert(name);
  }
  return names;
}

TEST(TrainingArgsGolden, ReadsTheFilesTransformersWrites) {
  const Json expected = read_json(golden_path("expected.json"));
  ASSERT_TRUE(expected.is_object())
      << "missing golden training_args/expected.json: build the berth_goldens target";
  std::set<std::string> berth_fields;
  for (const ArgumentSpec& spec : training_argument_specs()) berth_fields.insert(spec.name);
  const Json defaults = Json::parse(TrainingArguments().to_json_text());
  int cases = 0;
  for (const auto& [name, want] : expected.items()) {
    if (name == "transformers_version") continue;
    SCOPED_TRACE(name);
    ++cases;
    const Json hf = read_json(golden_path(name + ".json"));
    ASSERT_TRUE(hf.is_object());
    std::vector<std::string> warnings;
    const TrainingArguments args = TrainingArguments::load(golden_path(name + ".json"), &warnings);
    const Json ours = Json::parse(args.to_json_text());  // berth's view of the file

    // Every key of HF's file berth has reads as HF wrote it; transformers 5's own spellings map as in HF.
    int compared = 0;
    for (const auto& [key, value] : hf.items()) {
      if (!ours.contains(key)) continue;
      ++compared;
      if (key == "fsdp" && value.is_null()) {
        EXPECT_EQ(args.fsdp, "") << "fsdp null is off";
      } else if (key == "warmup_steps" && value.is_number_float() && value.get<double>() < 1) {
        EXPECT_EQ(args.warmup_steps, 0);
        EXPECT_EQ(args.warmup_ratio, value.get<double>());
      } else if (key == "warmup_steps" && value.is_number_float()) {
        EXPECT_EQ(args.warmup_steps, static_cast<int64_t>(value.get<double>()));  // HF: int(warmup_steps)
      } else {
        EXPECT_EQ(ours.at(key), value) << key;  // 2 and 2.0 compare equal
      }
    }
    EXPECT_GE(compared, 30);
    // The arguments the case set are not berth's defaults, so the comparison above had something to catch.
    for (const auto& [key, value] : want.at("set").items()) {
      if (key == "train_sampling_strategy") continue;
      ASSERT_TRUE(ours.contains(key)) << key;
      if (key == "warmup_steps" && args.warmup_steps == 0) {
        EXPECT_NE(args.warmup_ratio, defaults.at("warmup_ratio").get<double>());
      } else {
        EXPECT_NE(ours.at(key), defaults.at(key)) << key;
      }
    }
    // HF's derived values.
    for (const auto& [total, steps] : want.at("warmup_steps_for_total").items())
      EXPECT_EQ(args.resolved_warmup_steps(std::stoll(total)), steps.get<int64_t>()) << "total " << total;
    EXPECT_EQ(args.group_by_length, want.at("train_sampling_strategy") == "group_by_length");

    // The rest of HF's keys: listed in one warning line, each one of HF's that berth knows it lacks.
    ASSERT_EQ(warnings.size(), 1u) << (warnings.empty() ? "" : warnings.back());
    expect_contains(warnings[0],
                    {golden_path(name + ".json"), "HF training argument(s) berth does not implement"});
    std::set<std::string> rest;
    for (const auto& [key, value] : hf.items())
      if (!berth_fields.count(key) && key[0] != '_' && key != "train_sampling_strategy") rest.insert(key);
    EXPECT_EQ(ignored_names(warnings[0]), rest);
    for (const char* key : {"parallelism_config", "project", "use_cache"})
      EXPECT_TRUE(rest.count(key)) << key << ": transformers 5 writes it";
    // transformers 5 writes both checkpointing names; berth reads both (one setting).
    for (const char* key : {"activation_checkpointing", "gradient_checkpointing"})
      EXPECT_TRUE(hf.contains(key) && ours.contains(key)) << key;
  }
  EXPECT_EQ(cases, 3);
}

TEST(TrainingArgsGolden, Transformers5SpellingsInJson) {
  TrainingArguments args;
  merge_training_arguments_json(args, R"({"warmup_steps": 0.25, "train_sampling_strategy": "group_by_length",
                                          "fsdp": null})",
                                "hf5.json");
  EXPECT_EQ(args.warmup_steps, 0);
  EXPECT_EQ(args.warmup_ratio, 0.25);
  EXPECT_EQ(args.resolved_warmup_steps(10), 3);  // HF: ceil(10 * 0.25)
  EXPECT_TRUE(args.group_by_length);
  EXPECT_EQ(args.fsdp, "");
  merge_training_arguments_json(args, R"({"warmup_steps": 12.0, "train_sampling_strategy": "random"})",
                                "hf5.json");
  EXPECT_EQ(args.warmup_steps, 12);
  EXPECT_TRUE(args.group_by_length);  // "random" leaves berth's own group_by_length as it was
  expect_contains(error_text([&] {
                    merge_training_arguments_json(args, R"({"train_sampling_strategy": "sequential"})",
                                                  "hf5.json");
                  }),
                  {"hf5.json", "\"train_sampling_strategy\" must be \"random\" or \"group_by_length\"",
                   "found \"sequential\"", "Fix:"});
  expect_contains(error_text([&] { merge_training_arguments_json(args, R"({"fsdp": true})", "hf5.json"); }),
                  {"hf5.json", "\"fsdp\" is true", "fsdp_config", "Fix:", "\"full_shard\""});
  // Above 1, transformers 5 takes int() of a fractional warmup_steps; on the command line too.
  merge_training_arguments_json(args, R"({"warmup_steps": 10.5})", "hf5.json");
  EXPECT_EQ(args.warmup_steps, 10);
  EXPECT_EQ(args.warmup_ratio, 0);
  set_training_argument(args, "warmup_steps", "0.1");
  EXPECT_EQ(args.warmup_ratio, 0.1);
  EXPECT_EQ(args.warmup_steps, 0);
  set_training_argument(args, "warmup_steps", "7.9");
  EXPECT_EQ(args.warmup_steps, 7);
  expect_contains(
      error_text([&] { merge_training_arguments_json(args, R"({"warmup_steps": -0.5})", "hf5.json"); }),
      {"hf5.json: \"warmup_steps\" must be >= 0, found -0.5", "Fix:"});
}

Json training_args_golden_file(const std::string& name) {
  const Json file = read_json(golden_path(name));
  EXPECT_TRUE(file.is_object()) << "missing golden training_args/" << name
                                << ": build the berth_goldens target";
  return file;
}

// Every name berth ignores as transformers 5's is a field of transformers 5.24's TrainingArguments; the
// transformers 4 names berth also ignores are not (5 removed them), nor are berth's own arguments ignored.
TEST(TrainingArgsGolden, IgnoredNamesAreTransformersFields) {
  const Json hf = training_args_golden_file("hf_fields.json");
  ASSERT_TRUE(hf.contains("fields"));
  std::set<std::string> fields;
  for (const Json& name : hf.at("fields")) fields.insert(name.get<std::string>());
  EXPECT_GT(fields.size(), 100u);
  for (const std::string& name : unsupported_hf_training_arguments())
    EXPECT_TRUE(fields.count(name)) << name << " is not a field of transformers' TrainingArguments";
  for (const std::string& name : older_hf_training_arguments()) {
    EXPECT_FALSE(fields.count(name)) << name << " is a transformers 5 field: it belongs in the other list";
    EXPECT_TRUE(is_unsupported_hf_training_argument(name)) << name;
  }
  for (const ArgumentSpec& spec : training_argument_specs())
    EXPECT_FALSE(is_unsupported_hf_training_argument(spec.name)) << spec.name;
  for (const char* name : {"data_seed_per_worker", "disable_tqdm_per_rank", "greater_is_better_per_metric"})
    EXPECT_FALSE(is_unsupported_hf_training_argument(name)) << name << ": no transformers version has it";
}

// A late transformers 4.x file (keys transformers 5 dropped, warmup_ratio null, a fractional warmup_steps)
// and keys nobody knows load, each named in a warning; the command line stays strict about them.
TEST(TrainingArgsGolden, ForeignKeysInAFileAreWarningsNotErrors) {
  Json file = training_args_golden_file("training_args.json");
  ASSERT_TRUE(file.is_object());
  file["tp_size"] = 0;  // transformers 4.5x
  file["sharded_ddp"] = Json::array();
  file["fp16_backend"] = "auto";
  file["warmup_ratio"] = nullptr;
  file["warmup_steps"] = 12.75;
  file["use_cache"] = false;  // transformers 5.x
  file["train_sampling_strategy"] = "random";
  file["parallelism_config"] = nullptr;
  file["learning_rte"] = 1;  // nobody's
  file["future_knob"] = {{"x", 1}};
  std::vector<std::string> warnings;
  const TrainingArguments args = TrainingArguments::from_json_text(file.dump(), "late4.json", &warnings);
  EXPECT_EQ(args.warmup_steps, 12);
  EXPECT_EQ(args.warmup_ratio, 0);
  EXPECT_EQ(args.learning_rate, file.at("learning_rate").get<double>());
  ASSERT_EQ(warnings.size(), 2u);
  const std::set<std::string> ignored = ignored_names(warnings[0]);
  for (const char* key : {"tp_size", "sharded_ddp", "fp16_backend", "use_cache", "parallelism_config"})
    EXPECT_TRUE(ignored.count(key)) << key;
  EXPECT_EQ(warnings[1],
            "late4.json: ignored 2 unknown key(s), neither berth's training arguments nor HF transformers': "
            "future_knob, learning_rte (did you mean 'learning_rate'?). Fix: correct or remove them");
  // The command line: a typo is an error, and so is an HF argument berth lacks.
  TrainingArguments cli;
  expect_contains(error_text([&] { set_training_argument(cli, "learning_rte", "1"); }),
                  {"unknown training argument 'learning_rte'", "did you mean 'learning_rate'?"});
  expect_contains(error_text([&] { set_training_argument(cli, "tp_size", "2"); }),
                  {"training argument 'tp_size' is one of HF's that berth does not implement"});
}

// An ignored argument whose value would change the numbers is refused with its fix; its default loads.
TEST(TrainingArgsGolden, ArgumentsThatChangeTheMathAreRefused) {
  const Json hf = training_args_golden_file("training_args.json");
  ASSERT_TRUE(hf.is_object());
  const std::vector<std::pair<std::string, Json>> refused = {
      {"optim", "adafactor"},
      {"optim", "adamw_hf"},
      {"optim", "sgd"},
      {"optim_args", "betas=(0.9,0.95)"},
      {"optim_target_modules", Json::array({"attn"})},
      {"adafactor", true},
      {"neftune_noise_alpha", 5},
      {"fp16_full_eval", true},
      {"bf16_full_eval", true},
      {"tf32", true},
      {"ignore_data_skip", true},
      {"per_gpu_train_batch_size", 4},
      {"split_batches", true},
      {"accelerator_config", {{"split_batches", true}}},
  };
  for (const auto& [key, value] : refused) {
    SCOPED_TRACE(key + "=" + value.dump());
    Json file = hf;
    file[key] = value;
    TrainingArguments args;
    expect_contains(
        error_text([&] { merge_training_arguments_json(args, file.dump(), "hf.json"); }),
        {"hf.json: \"" + key + "\": " + value.dump() + " asks for ", "which berth does not implement",
         "would change the numbers training computes", "Fix: "});
  }
  for (const char* optim : {"adamw_torch", "adamw_torch_fused", "adamw_apex_fused"}) {
    Json file = hf;
    file["optim"] = optim;
    TrainingArguments args;
    EXPECT_NO_THROW(merge_training_arguments_json(args, file.dump(), "hf.json")) << optim;
  }
  EXPECT_EQ(hf.at("optim"), "adamw_torch_fused");  // transformers 5.24's default, accepted above
}

}  // namespace
}  // namespace berth::train
