// JsonlLog: one parseable JSON object per line, integer steps, resume keeps the log and drops a cut-off line.
#include "berth/train/jsonl_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

namespace berth::train {
namespace {

std::string read_log_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<nlohmann::json> parsed_lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(read_log_file(path));
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(JsonlLog, WritesOneObjectPerLineWithAnIntegerStep) {
  TempDir dir;
  const std::string path = dir.file("log.jsonl");
  JsonlLog log(path, false);
  log.write({{"loss", 0.214}, {"learning_rate", 4.1e-5}, {"epoch", 1.11}, {"step", 370}});
  // Each line is on disk as soon as write returns, not when the log closes.
  EXPECT_EQ(read_log_file(path), "{\"step\":370,\"epoch\":1.11,\"learning_rate\":4.1e-05,\"loss\":0.214}\n");
  log.write({{"eval_loss", 0.3}, {"step", 400}}, {{"split", "eval"}});
  const auto lines = parsed_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0]["step"].is_number_integer());
  EXPECT_EQ(lines[1]["split"], "eval");
  EXPECT_EQ(lines[1]["eval_loss"].get<double>(), 0.3);
}

TEST(JsonlLog, NonFiniteValuesAreNullAndAFractionalStepStaysANumber) {
  TempDir dir;
  JsonlLog log(dir.file("log.jsonl"), false);
  log.write({{"loss", std::nan("")}, {"grad_norm", INFINITY}, {"step", 2.5}});
  const auto line = parsed_lines(dir.file("log.jsonl")).at(0);
  EXPECT_TRUE(line["loss"].is_null());
  EXPECT_TRUE(line["grad_norm"].is_null());
  EXPECT_EQ(line["step"].get<double>(), 2.5);
}

TEST(JsonlLog, AFreshLogReplacesAnOldOne) {
  TempDir dir;
  std::ofstream(dir.file("log.jsonl")) << "{\"step\":1}\n";
  JsonlLog log(dir.file("log.jsonl"), false);
  EXPECT_EQ(read_log_file(dir.file("log.jsonl")), "");
}

TEST(JsonlLog, ResumingAppendsAndDropsALineACrashCutShort) {
  TempDir dir;
  const std::string path = dir.file("log.jsonl");
  std::ofstream(path) << "{\"step\":1,\"loss\":0.5}\n{\"step\":2,\"loss\":0.4}\n{\"step\":3,\"lo";
  JsonlLog log(path, true);
  expect_contains(log.note(), {path, "dropped its last line", "{\"step\":3,\"lo"});
  log.write({{"step", 3}, {"loss", 0.3}});
  const auto lines = parsed_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2]["step"], 3);
}

TEST(JsonlLog, ResumingACompleteOrMissingLogNotesNothing) {
  TempDir dir;
  std::ofstream(dir.file("log.jsonl")) << "{\"step\":1}\n";
  JsonlLog log(dir.file("log.jsonl"), true);
  EXPECT_EQ(log.note(), "");
  JsonlLog fresh(dir.file("new.jsonl"), true);
  EXPECT_EQ(fresh.note(), "");
  fresh.write({{"step", 1}});
  EXPECT_EQ(parsed_lines(dir.file("new.jsonl")).size(), 1u);
}

TEST(JsonlLog, DropAfterStepRemovesWhatARunLoggedPastItsLastSave) {
  TempDir dir;
  const std::string path = dir.file("log.jsonl");
  {
    JsonlLog log(path, false);
    for (int step = 10; step <= 50; step += 10) log.write({{"step", step}, {"loss", 1.0 / step}});
  }
  JsonlLog log(path, true);
  EXPECT_EQ(log.drop_after_step(30), 2);
  log.write({{"step", 40}, {"loss", 0.5}});
  const auto lines = parsed_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2]["step"], 30);
  EXPECT_EQ(lines[3]["loss"], 0.5);
  EXPECT_EQ(log.drop_after_step(100), 0);
}

TEST(JsonlLog, AKeyThatIsBothANumberAndAStringIsRefused) {
  TempDir dir;
  JsonlLog log(dir.file("log.jsonl"), false);
  expect_contains(error_text([&] {
                    log.write({{"split", 1}}, {{"split", "eval"}});
                  }),
                  {"\"split\"", "both a number and a string", "Fix:"});
}

TEST(JsonlLog, AnUnwritableFolderIsNamed) {
  TempDir dir;
  expect_contains(error_text([&] { JsonlLog(dir.file("missing/log.jsonl"), false); }),
                  {dir.file("missing/log.jsonl"), "Fix:"});
}

}  // namespace
}  // namespace berth::train
