// TensorBoardLog and report_to tensorboard, read back by TensorBoard's own readers (tensorboard_events.py,
// tensorboard from scripts/oracles.txt): the record framing with odd values, a damaged record refused, and a
// Trainer run whose scalars equal its log.jsonl.
#include "berth/train/tensorboard_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "berth/model/bert_for_sequence_classification.h"
#include "berth/train/trainer.h"
#include "support/cli_runner.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

// tensorboard_events.py MODE PATH through the venv's Python; the JSON it prints (a failed read fails the
// test).
nlohmann::json tensorboard_read(const std::string& mode, const std::string& path, int* exit_code = nullptr) {
  const auto result =
      berth::testing::run_program(std::string(BERTH_SOURCE_DIR) + "/scripts/python " + BERTH_SOURCE_DIR +
                                      "/tests/train/tensorboard_events.py " + mode + " '" + path + "'",
                                  /*merge_stderr=*/false);
  if (exit_code) *exit_code = result.exit_code;
  if (result.exit_code != 0) return nullptr;
  const auto parsed = nlohmann::json::parse(result.output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << result.output;
  return parsed;
}

std::vector<std::string> tensorboard_event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(entry.path());
  return files;
}

// A value as tensorboard_events.py prints it against the float berth meant: exactly that float, or the same
// non-finite kind.
void expect_tensorboard_value(const nlohmann::json& read, float expected, const std::string& where) {
  if (std::isnan(expected)) {
    EXPECT_EQ(read, "nan") << where;
  } else if (std::isinf(expected)) {
    EXPECT_EQ(read, expected > 0 ? "inf" : "-inf") << where;
  } else {
    ASSERT_TRUE(read.is_number()) << where << ": " << read;
    EXPECT_EQ(static_cast<float>(read.get<double>()), expected) << where;
    EXPECT_EQ(std::signbit(read.get<double>()), std::signbit(expected)) << where;
  }
}

TEST(TensorBoardLog, OddValuesLongTagsAndManyRecordsReadBackThroughTensorBoardsRecordReader) {
  TempDir dir;
  const std::string long_tag(300, 'x');      // a two-byte length varint
  const std::string longer_tag(20000, 'y');  // three bytes
  const std::vector<std::pair<std::string, double>> odd = {
      {"nan", std::nan("")},
      {"inf", std::numeric_limits<double>::infinity()},
      {"minus_inf", -std::numeric_limits<double>::infinity()},
      {"zero", 0.0},
      {"minus_zero", -0.0},
      {"denormal", 1e-40},
      {"float_max", 3.4028234663852886e38},
      {"rounded", 0.1},  // stored as float(0.1)
      {long_tag, 1.5},
      {longer_tag, -2.5},
      {"eval_caf\xc3\xa9", 7.0}};
  std::string path;
  {
    TensorBoardLog log(dir.file("tb"));
    path = log.path();
    std::map<std::string, double> entry(odd.begin(), odd.end());
    entry["step"] = 5;  // not a scalar: the event's step
    log.write_scalars(5, entry);
    for (int i = 0; i < 1500; ++i) log.write_scalars(i * 1000003LL, {{"loss", 1.0 / (i + 1)}});
    log.write_scalars(int64_t{1} << 40, {{"epoch", 3.0}});
    log.write_text(0, "args", std::string(5000, 'a') + " \xe2\x9c\x93");
  }
  const nlohmann::json read = tensorboard_read("records", path);
  ASSERT_TRUE(read.is_object());
  const auto& events = read["events"];
  ASSERT_EQ(events.size(), 1u + 1u + 1500u + 1u + 1u);
  EXPECT_EQ(events[0]["file_version"], "brain.Event:2");
  EXPECT_GT(events[0]["wall_time"].get<double>(), 1.7e9);
  const auto& first = events[1];
  EXPECT_EQ(first["step"], 5);
  ASSERT_EQ(first["values"].size(), odd.size());  // "step" is not among them
  std::map<std::string, nlohmann::json> by_tag;
  for (const auto& value : first["values"]) by_tag[value["tag"]] = value["simple_value"];
  for (const auto& [key, value] : odd) {
    const std::string tag = tensorboard_tag(key);
    ASSERT_TRUE(by_tag.count(tag)) << tag.substr(0, 40);
    expect_tensorboard_value(by_tag[tag], static_cast<float>(value), tag.substr(0, 40));
  }
  for (int i = 0; i < 1500; ++i) {
    const auto& event = events[2 + i];
    ASSERT_EQ(event["step"], i * 1000003LL);
    ASSERT_EQ(event["values"][0]["tag"], "train/loss");
    expect_tensorboard_value(event["values"][0]["simple_value"], static_cast<float>(1.0 / (i + 1)), "loss");
  }
  EXPECT_EQ(events[1502]["step"], int64_t{1} << 40);
  const auto& text = events[1503]["values"][0];
  EXPECT_EQ(text["tag"], "args/text_summary");
  EXPECT_EQ(text["plugin"], "text");
  EXPECT_EQ(text["dtype"], 7);  // DT_STRING
  EXPECT_EQ(text["shape"], nlohmann::json::array({1}));
  EXPECT_EQ(text["text"], nlohmann::json::array({std::string(5000, 'a') + " \xe2\x9c\x93"}));
}

TEST(TensorBoardLog, AFlippedByteFailsTheReadersCrcCheck) {
  TempDir dir;
  std::string path;
  {
    TensorBoardLog log(dir.file("tb"));
    path = log.path();
    log.write_scalars(1, {{"loss", 0.5}});
  }
  int exit_code = -1;
  ASSERT_TRUE(tensorboard_read("records", path, &exit_code).is_object());
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(-6, std::ios::end);  // inside the last record's data (its float)
  file.put('\x5a');
  file.close();
  tensorboard_read("records", path, &exit_code);
  EXPECT_NE(exit_code, 0) << "TensorBoard's reader took a record whose CRC no longer matches";
}

TEST(TensorBoardLog, TagsAndLoggingDirsAreHfs) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("eval_loss"), "eval/loss");
  EXPECT_EQ(tensorboard_tag("test_f1"), "test/f1");
  EXPECT_EQ(tensorboard_tag("train_runtime"), "train/train_runtime");
  ::unsetenv("TENSORBOARD_LOGGING_DIR");
  const std::string dir = tensorboard_logging_dir("/tmp/out", "");
  EXPECT_EQ(dir.rfind("/tmp/out/runs/", 0), 0u) << dir;
  EXPECT_NE(dir.find('_'), std::string::npos) << dir;  // <Mon DD_HH-MM-SS>_<host>
  ::setenv("TENSORBOARD_LOGGING_DIR", "/tmp/tb-here", 1);
  EXPECT_EQ(tensorboard_logging_dir("/tmp/out", ""), "/tmp/tb-here");
  // A trial logs beside the run's, whatever the variable says (HF).
  const std::string trial = tensorboard_logging_dir("/tmp/out", "run-3");
  EXPECT_EQ(trial.rfind("/tmp/out/runs/", 0), 0u) << trial;
  EXPECT_EQ(trial.substr(trial.size() - 6), "/run-3");
  ::unsetenv("TENSORBOARD_LOGGING_DIR");
}

TEST(TensorBoardLog, AnUnwritableDirectoryNamesTheFix) {
  TempDir dir;
  std::ofstream(dir.file("afile")) << "x";
  expect_contains(error_text([&] { TensorBoardLog log(dir.file("afile/tb")); }),
                  {"afile/tb", "cannot create the TensorBoard logging directory",
                   "Fix:", "TENSORBOARD_LOGGING_DIR", "report_to jsonl"});
}

// A Trainer with report_to jsonl and tensorboard: every number of every log.jsonl entry (but the memory
// table, which HF does not log) is a scalar at its step in what TensorBoard shows, and nothing else is.
TEST(TensorBoardLog, ATrainerRunsScalarsAreItsLogJsonl) {
  TempDir dir;
  TrainingArguments args = berth::testing::tiny_args(dir.file("out"));
  args.report_to = {"jsonl", "tensorboard"};
  args.logging_steps = 1;
  args.eval_strategy = "steps";
  args.eval_steps = 3;
  args.max_steps = 7;
  TrainerOptions options;
  options.args = args;
  options.model_init = [](const Trial*) {
    return std::shared_ptr<TaskModel>(BertForSequenceClassification(berth::testing::tiny_config(0.0)).ptr());
  };
  options.train_dataset = berth::testing::synthetic_dataset(40, 1);
  options.eval_dataset = berth::testing::synthetic_dataset(16, 2);
  std::ostringstream console;
  options.console = &console;
  ::unsetenv("TENSORBOARD_LOGGING_DIR");
  Trainer trainer(std::move(options));
  trainer.train();
  const auto files = tensorboard_event_files(dir.file("out/runs"));
  ASSERT_EQ(files.size(), 1u);
  const nlohmann::json read = tensorboard_read("run", fs::path(files[0]).parent_path().string());
  ASSERT_TRUE(read.is_object());
  std::ifstream log(dir.file("out/log.jsonl"));
  size_t expected_points = 0;
  std::set<std::string> tags;
  for (std::string line; std::getline(log, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.contains("memory_held_bytes")) continue;
    const int64_t step = entry["step"];
    for (const auto& [key, value] : entry.items()) {
      if (key == "step" || !value.is_number()) continue;
      const std::string tag = tensorboard_tag(key);
      tags.insert(tag);
      ++expected_points;
      const auto& points = read["scalars"][tag];
      const auto at = std::find_if(points.begin(), points.end(), [&](const auto& p) { return p[0] == step; });
      ASSERT_NE(at, points.end()) << tag << " at step " << step;
      expect_tensorboard_value((*at)[1], static_cast<float>(value.get<double>()), tag);
    }
  }
  for (const char* tag : {"train/loss", "train/learning_rate", "train/grad_norm", "train/epoch", "eval/loss",
                          "eval/accuracy", "train/train_runtime"})
    EXPECT_TRUE(tags.count(tag)) << tag;
  size_t points = 0;
  for (const auto& [tag, series] : read["scalars"].items()) points += series.size();
  EXPECT_EQ(points, expected_points);
  const nlohmann::json args_text = nlohmann::json::array({trainer.args().to_json_text()});
  EXPECT_EQ(read["texts"]["args/text_summary"],
            nlohmann::json::array({nlohmann::json::array({0, args_text})}));
}

}  // namespace
}  // namespace berth::train
