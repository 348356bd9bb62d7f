// TextDataset: JSONL, CSV and TSV files, columns, label maps, problem types, and every malformed case by
// text.
#include "berth/data/text_dataset.h"

#include <gtest/gtest.h>

#include <cctype>

#include "support/data_files.h"
#include "support/test_support.h"

namespace {

using namespace berth::data;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;
using berth::testing::write_file;

TEST(TextDataset, JsonlWithStringLabels) {
  TempDir dir;
  auto path = write_file(dir, "d.jsonl",
                         "{\"text\": \"good film\", \"label\": \"pos\"}\n"
                         "\n"
                         "{\"text\": \"dull\", \"label\": \"neg\", \"extra\": 1}\n");
  TextDataset data = TextDataset::load(path);
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data.label_map().labels(), (std::vector<std::string>{"neg", "pos"}));
  EXPECT_EQ(data[0].text, "good film");
  EXPECT_EQ(data[0].label, 1);
  EXPECT_EQ(data[1].label, 0);
  EXPECT_EQ(data[1].line, 3u);
  EXPECT_FALSE(data[0].text_pair.has_value());
}

TEST(TextDataset, JsonlIntegerLabelsAndTextPairs) {
  TempDir dir;
  auto path = write_file(dir, "pairs.jsonl",
                         "{\"premise\": \"a\", \"hypothesis\": \"b\", \"gold\": 2}\n"
                         "{\"premise\": \"c\", \"hypothesis\": \"d\", \"gold\": 10}\n");
  TextDatasetOptions options;
  options.text_column = "premise";
  options.text_pair_column = "hypothesis";
  options.label_column = "gold";
  TextDataset data = TextDataset::load(path, options);
  EXPECT_EQ(data.label_map().labels(), (std::vector<std::string>{"2", "10"}));
  EXPECT_EQ(data[1].text_pair, "d");
  EXPECT_EQ(data[1].label, 1);
}

TEST(TextDataset, CsvWithQuotesCrlfAndBom) {
  TempDir dir;
  auto path = write_file(dir, "d.csv",
                         "\xEF\xBB\xBFid,text,label\r\n"
                         "1,\"Hello, world\",spam\r\n"
                         "2,\"He said \"\"no\"\"\nthen left\",ham\r\n");
  TextDataset data = TextDataset::load(path);
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[0].text, "Hello, world");
  EXPECT_EQ(data[1].text, "He said \"no\"\nthen left");
  EXPECT_EQ(data.label_map().labels(), (std::vector<std::string>{"ham", "spam"}));
  EXPECT_EQ(data[1].label, 0);
}

TEST(TextDataset, TsvWithHeader) {
  TempDir dir;
  auto path = write_file(dir, "d.tsv", "sentence\tlabel\nit's \"great\"\t1\nbad\t0\n");
  TextDatasetOptions options;
  options.text_column = "sentence";
  TextDataset data = TextDataset::load(path, options);
  EXPECT_EQ(data[0].text, "it's \"great\"");
  EXPECT_EQ(data[0].label, 1);
}

TEST(TextDataset, FormatOptionOverridesTheExtension) {
  TempDir dir;
  auto path = write_file(dir, "data.txt", "text,label\na,b\n");
  expect_contains(error_text([&] { TextDataset::load(path); }),
                  {"data.txt: cannot tell the format from the extension", "Fix:"});
  TextDatasetOptions options;
  options.format = TextFormat::Csv;
  EXPECT_EQ(TextDataset::load(path, options).size(), 1u);
}

TEST(TextDataset, FixedLabelMapKeepsItsIdsAndRefusesUnknownLabels) {
  TempDir dir;
  auto path = write_file(dir, "d.jsonl",
                         "{\"text\": \"a\", \"label\": \"spam\"}\n{\"text\": \"b\", \"label\": \"eggs\"}\n");
  TextDatasetOptions options;
  options.label_map = LabelMap({"spam", "ham"});
  expect_contains(error_text([&] { TextDataset::load(path, options); }),
                  {"d.jsonl:2: unknown label 'eggs'; the known labels are: spam, ham", "Fix:"});
  auto good = write_file(dir, "e.jsonl", "{\"text\": \"a\", \"label\": \"ham\"}\n");
  TextDataset data = TextDataset::load(good, options);
  EXPECT_EQ(data[0].label, 1);
  EXPECT_EQ(data.label_map(), LabelMap({"spam", "ham"}));
}

// HF datasets' ClassLabel: against a fixed map (a model's id2label), an integer label that is not one of its
// names is the class index; a name that is a number (labels from integer data) still matches first.
TEST(TextDataset, IntegerLabelsIndexAFixedLabelMap) {
  TempDir dir;
  auto path = write_file(dir, "c.jsonl",
                         "{\"text\": \"a\", \"label\": 1}\n{\"text\": \"b\", \"label\": 0}\n"
                         "{\"text\": \"c\", \"label\": \"POSITIVE\"}\n");
  TextDatasetOptions options;
  options.label_map = LabelMap({"NEGATIVE", "POSITIVE"});
  TextDataset data = TextDataset::load(path, options);
  EXPECT_EQ(data[0].label, 1);
  EXPECT_EQ(data[1].label, 0);
  EXPECT_EQ(data[2].label, 1);
  options.label_map = LabelMap({"1", "0"});  // names first: "1" is id 0 here
  data = TextDataset::load(write_file(dir, "n.jsonl", "{\"text\": \"a\", \"label\": 1}\n"), options);
  EXPECT_EQ(data[0].label, 0);
  options.label_map = LabelMap({"LABEL_0", "LABEL_1"});
  options.problem_type = ProblemType::MultiLabel;
  data = TextDataset::load(write_file(dir, "m.jsonl", "{\"text\": \"a\", \"label\": [1, \"LABEL_0\"]}\n"),
                           options);
  EXPECT_EQ(data[0].labels, (std::vector<int64_t>{0, 1}));
  options.problem_type = ProblemType::SingleLabel;
  auto outside =
      write_file(dir, "o.jsonl", "{\"text\": \"a\", \"label\": 0}\n{\"text\": \"b\", \"label\": 2}\n");
  expect_contains(error_text([&] { TextDataset::load(outside, options); }),
                  {"o.jsonl:2: label 2 is not one of the labels (LABEL_0, LABEL_1) and, as a class index (HF "
                   "datasets' ClassLabel), it is outside the 2 classes 0..1",
                   "Fix: use class indices 0..1 or the label names"});
  auto negative = write_file(dir, "g.jsonl", "{\"text\": \"a\", \"label\": -1}\n");
  expect_contains(error_text([&] { TextDataset::load(negative, options); }),
                  {"g.jsonl:1: label -1 is not one"});
}

TEST(TextDataset, RegressionTargets) {
  TempDir dir;
  auto jsonl =
      write_file(dir, "r.jsonl", "{\"text\": \"a\", \"label\": 0.25}\n{\"text\": \"b\", \"label\": 3}\n");
  TextDatasetOptions options;
  options.problem_type = ProblemType::Regression;
  TextDataset data = TextDataset::load(jsonl, options);
  EXPECT_TRUE(data.label_map().empty());
  EXPECT_EQ(data[0].value, 0.25);
  EXPECT_EQ(data[1].value, 3.0);
  auto csv = write_file(dir, "r.csv", "text,label\na,-1.5e1\nb,high\n");
  expect_contains(error_text([&] { TextDataset::load(csv, options); }),
                  {"r.csv:3: expected a number for the regression target \"label\", found 'high'"});
  auto text_label = write_file(dir, "s.jsonl", "{\"text\": \"a\", \"label\": \"0.5\"}\n");
  expect_contains(error_text([&] { TextDataset::load(text_label, options); }),
                  {"s.jsonl:1: expected a number for the regression target \"label\", found string \"0.5\""});
}

TEST(TextDataset, MultiLabelLists) {
  TempDir dir;
  auto jsonl = write_file(dir, "m.jsonl",
                          "{\"text\": \"a\", \"label\": [\"sports\", \"news\", \"sports\"]}\n"
                          "{\"text\": \"b\", \"label\": []}\n");
  TextDatasetOptions options;
  options.problem_type = ProblemType::MultiLabel;
  TextDataset data = TextDataset::load(jsonl, options);
  EXPECT_EQ(data.label_map().labels(), (std::vector<std::string>{"news", "sports"}));
  EXPECT_EQ(data[0].labels, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(data[1].labels.empty());
  auto csv = write_file(dir, "m.csv", "text,label\na,\"[\"\"x\"\", \"\"y\"\"]\"\nb,x\n");
  expect_contains(error_text([&] { TextDataset::load(csv, options); }),
                  {"m.csv:3: expected a JSON list of labels in \"label\", found x"});
  auto not_list = write_file(dir, "n.jsonl", "{\"text\": \"a\", \"label\": \"x\"}\n");
  expect_contains(error_text([&] { TextDataset::load(not_list, options); }),
                  {"n.jsonl:1: expected a list of labels in \"label\", found string \"x\""});
}

TEST(TextDataset, UnlabeledDataNeedsNoLabelColumn) {
  TempDir dir;
  auto path = write_file(dir, "p.jsonl", "{\"text\": \"a\"}\n");
  TextDatasetOptions options;
  options.labeled = false;
  TextDataset data = TextDataset::load(path, options);
  EXPECT_EQ(data[0].label, -1);
}

TEST(TextDataset, JsonlRoundTripsThroughWriteJsonl) {
  TempDir dir;
  std::vector<TextExample> examples(2);
  examples[0].text = "caf\xC3\xA9 \"quoted\"\nnew line";
  examples[0].text_pair = "pair";
  examples[0].label = 1;
  examples[1].text = "b";
  examples[1].text_pair = "q";
  examples[1].label = 0;
  LabelMap map({"ham", "spam"});
  write_jsonl(dir.file("out.jsonl"), examples, map, ProblemType::SingleLabel);
  TextDatasetOptions options;
  options.text_pair_column = "text_pair";
  options.label_map = map;
  TextDataset back = TextDataset::load(dir.file("out.jsonl"), options);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].text, examples[0].text);
  EXPECT_EQ(back[0].text_pair, "pair");
  EXPECT_EQ(back[0].label, 1);
  EXPECT_EQ(back[1].label, 0);
  // Nothing but the final file is left behind.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(TextDataset, WriteJsonlToAMissingFolderFailsWithoutLeavingFiles) {
  TempDir dir;
  expect_contains(error_text([&] {
                    write_jsonl(dir.file("no/such/out.jsonl"), {}, LabelMap(), ProblemType::SingleLabel);
                  }),
                  {"no/such/out.jsonl: cannot create", "Fix: make sure the folder exists"});
}

struct BadFile {
  std::string name;
  std::string content;
  std::vector<std::string> message;
};

// ctest lists each case by its file name rather than gtest's byte dump of the struct.
void PrintTo(const BadFile& bad, std::ostream* os) { *os << bad.name; }

class TextDatasetBadInput : public ::testing::TestWithParam<BadFile> {};

TEST_P(TextDatasetBadInput, ErrorNamesFileLineAndFix) {
  TempDir dir;
  const BadFile& bad = GetParam();
  auto path = write_file(dir, bad.name, bad.content);
  TextDatasetOptions options;
  if (bad.name.rfind("pair", 0) == 0) options.text_pair_column = "text_pair";
  std::string message = error_text([&] { TextDataset::load(path, options); });
  expect_contains(message, bad.message);
  expect_contains(message, {"Fix:"});
}

INSTANTIATE_TEST_SUITE_P(
    Files, TextDatasetBadInput,
    ::testing::Values(
        BadFile{"a.jsonl",
                "{\"text\": \"a\", \"label\": 1}\n{\"text\": \"b\", \"label\": 1\n",
                {"a.jsonl:2: malformed JSON (parse error at line 1, column 25"}},
        BadFile{"b.jsonl", "[\"text\", 1]\n", {"b.jsonl:1: expected a JSON object, found array"}},
        BadFile{"c.jsonl",
                "{\"txt\": \"a\", \"label\": 1}\n",
                {"c.jsonl:1: missing \"text\" (found keys: label, txt)"}},
        BadFile{"d.jsonl",
                "{\"text\": \"a\", \"label\": 1}\n{\"text\": \"b\"}\n",
                {"d.jsonl:2: missing label \"label\""}},
        BadFile{"e.jsonl", "{\"text\": \"a\", \"label\": null}\n", {"e.jsonl:1: missing label \"label\""}},
        BadFile{"f.jsonl", "{\"text\": \"  \", \"label\": 1}\n", {"f.jsonl:1: \"text\" is empty"}},
        BadFile{"g.jsonl",
                "{\"text\": 5, \"label\": 1}\n",
                {"g.jsonl:1: \"text\" must be a string, found number 5"}},
        BadFile{
            "h.jsonl",
            "{\"text\": \"a\", \"label\": 1.5}\n",
            {"h.jsonl:1: expected a label name (string) or class id (integer) in \"label\", found number 1.5",
             "regression"}},
        BadFile{"i.jsonl",
                "{\"text\": \"a\", \"label\": \"\"}\n",
                {"i.jsonl:1: label \"label\" is an empty string"}},
        BadFile{"j.jsonl", "\n\n", {"j.jsonl: no examples found"}},
        BadFile{"pair.jsonl", "{\"text\": \"a\", \"label\": 1}\n", {"pair.jsonl:1: missing \"text_pair\""}},
        BadFile{"a.csv", "text,label\n\"a,1\n", {"a.csv:2: unterminated quoted field"}},
        BadFile{"b.csv",
                "text,label\na,1\nb,1,extra\n",
                {"b.csv:3: expected 2 fields as in the header, found 3", "quote fields that contain ','"}},
        BadFile{"c.csv",
                "sentence,label\na,1\n",
                {"c.csv:1: expected a column \"text\" in the header, found \"sentence\", \"label\""}},
        BadFile{"d.csv", "text,label\na,\n", {"d.csv:2: missing label (column \"label\" is empty)"}},
        BadFile{"e.csv", "text,label\n,1\n", {"e.csv:2: \"text\" is empty"}},
        BadFile{"f.csv", "", {"f.csv: no header row found"}},
        BadFile{"g.csv", "text,label\n", {"g.csv: no examples found"}},
        BadFile{"a.tsv",
                "text\tlabel\na\tb\tc\n",
                {"a.tsv:2: expected 2 fields as in the header, found 3", "a TSV field cannot hold a tab"}},
        BadFile{"b.tsv", "text\tlab\na\tb\n", {"b.tsv:1: expected a column \"label\" in the header"}}),
    // Readable test names: "a_jsonl", "b_csv", ...
    [](const ::testing::TestParamInfo<BadFile>& info) {
      std::string name = info.param.name;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(TextDataset, MissingFileSaysSo) {
  expect_contains(
      error_text([] { TextDataset::load("/no/such/file.jsonl"); }),
      {"data file /no/such/file.jsonl: expected a file, found nothing at that path. Fix: check the path"});
}

TEST(ProblemType, HfNamesBothWays) {
  for (ProblemType type : {ProblemType::SingleLabel, ProblemType::MultiLabel, ProblemType::Regression})
    EXPECT_EQ(parse_problem_type(to_string(type)), type);
  expect_contains(error_text([] { parse_problem_type("binary"); }), {"unknown problem type 'binary'"});
}

// Found by fuzz/dataset_rows_fuzzer: a TSV label with bytes that are not UTF-8 was read, and the JSONL that
// write_jsonl made of it no longer matched its label; a JSONL number beyond a double escaped as nlohmann's
// out_of_range. Both are now refused naming the line.
TEST(TextDataset, BytesNotUtf8AndNumbersBeyondADoubleAreRefusedNamingTheLine) {
  TempDir dir;
  const std::string tsv = write_file(dir, "d.tsv", "text\tlabel\nhello\tpos\nworld\tpos\xa1\xa1\n");
  expect_contains(error_text([&] { TextDataset::load(tsv); }),
                  {"d.tsv:3: expected UTF-8 text, found the byte 0xA1", "Fix: save the file as UTF-8"});
  const std::string csv = write_file(dir, "d.csv", "text,label\n\"caf\xe9\",pos\n");
  expect_contains(error_text([&] { TextDataset::load(csv); }),
                  {"d.csv:2: expected UTF-8 text, found the byte 0xE9"});
  const std::string jsonl = write_file(dir, "d.jsonl", "{\"text\": \"a\", \"label\": 1e400}\n");
  TextDatasetOptions regression;
  regression.problem_type = ProblemType::Regression;
  expect_contains(error_text([&] { TextDataset::load(jsonl, regression); }),
                  {"d.jsonl:1", "number overflow parsing '1e400'"});
}

}  // namespace
