// SQuAD-style examples from JSONL (HF datasets' squad layout, custom column names) and SQuAD's own JSON
// layout, answer starts in code points, and the refusals of answers that do not stand where they say.
#include "berth/data/question_answering_dataset.h"

#include "support/test_support.h"

#include <gtest/gtest.h>

#include <fstream>

namespace berth {
namespace {

void qa_dataset_write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(QuestionAnsweringDataset, ReadsJsonlWithCodePointStarts) {
  testing::TempDir dir;
  // "é" is two bytes and one character: "Zürich" starts at character 10 of "Café near Zürich." (byte 11).
  qa_dataset_write(
      dir.file("a.jsonl"),
      R"({"id": "q1", "question": "Where?", "context": "Café near Zürich.", )"
      R"("answers": {"text": ["Zürich"], "answer_start": [10]}})"
      "\n\n"
      R"({"question": "None?", "context": "Nothing here.", "answers": {"text": [], "answer_start": []}})"
      "\n");
  const auto examples = data::load_question_answering_examples(dir.file("a.jsonl"), {}, true);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].id, "q1");
  EXPECT_EQ(examples[0].answer_texts, std::vector<std::string>{"Zürich"});
  EXPECT_EQ(examples[0].answer_starts, std::vector<size_t>{10});
  EXPECT_EQ(examples[1].id, "1");  // no id: the row number
  EXPECT_TRUE(examples[1].answer_texts.empty());
  EXPECT_EQ(examples[1].line, 3u);
  EXPECT_EQ(data::code_point_slice("Café near Zürich.", 10, 16), "Zürich");
  EXPECT_EQ(data::code_point_slice("Café", 2, 99), "fé");
  EXPECT_EQ(data::code_point_count("Café near Zürich."), 17u);
}

TEST(QuestionAnsweringDataset, ReadsCustomColumnsAndSquadJson) {
  testing::TempDir dir;
  qa_dataset_write(
      dir.file("c.jsonl"),
      R"({"qid": 7, "q": "Which?", "passage": "The red one.", "gold": {"text": ["red"], "answer_start": [4]}})"
      "\n");
  data::QuestionAnsweringColumns columns;
  columns.id = "qid";
  columns.question = "q";
  columns.context = "passage";
  columns.answers = "gold";
  const auto custom = data::load_question_answering_examples(dir.file("c.jsonl"), columns, true);
  ASSERT_EQ(custom.size(), 1u);
  EXPECT_EQ(custom[0].id, "7");
  EXPECT_EQ(custom[0].context, "The red one.");

  qa_dataset_write(dir.file("squad.json"), R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [
      {"context": "The red one and the blue one.", "qas": [
        {"id": "a", "question": "Which first?", "answers": [{"text": "red", "answer_start": 4}]},
        {"id": "b", "question": "Which second?", "answers": [{"text": "blue", "answer_start": 20},
                                                              {"text": "the blue", "answer_start": 16}]}]}]}]})");
  const auto squad = data::load_question_answering_examples(dir.file("squad.json"), {}, true);
  ASSERT_EQ(squad.size(), 2u);
  EXPECT_EQ(squad[1].id, "b");
  EXPECT_EQ(squad[1].answer_texts, (std::vector<std::string>{"blue", "the blue"}));
  EXPECT_EQ(squad[1].answer_starts, (std::vector<size_t>{20, 16}));
  // Unlabelled (prediction input): the answers are not read.
  qa_dataset_write(dir.file("p.jsonl"), R"({"question": "Which?", "context": "The red one."})");
  EXPECT_TRUE(data::load_question_answering_examples(dir.file("p.jsonl"), {}, false)[0].answer_texts.empty());
}

TEST(QuestionAnsweringDataset, RefusesAnswersThatDoNotStandWhereTheySay) {
  testing::TempDir dir;
  qa_dataset_write(dir.file("no_start.jsonl"),
                   R"({"id": "x", "question": "Q?", "context": "abc", "answers": {"text": ["b"]}})");
  testing::expect_contains(testing::error_text([&] {
                             data::load_question_answering_examples(dir.file("no_start.jsonl"), {}, true);
                           }),
                           {"no_start.jsonl:1", "no answer_start", "Fix: give one answer_start"});
  qa_dataset_write(dir.file("moved.jsonl"),
                   R"({"id": "x", "question": "Q?", "context": "Café near Zürich.", )"
                   R"("answers": {"text": ["Zürich"], "answer_start": [11]}})");
  testing::expect_contains(
      testing::error_text([&] { data::load_question_answering_examples(dir.file("moved.jsonl"), {}, true); }),
      {"moved.jsonl:1", "\"Zürich\" is not at answer_start 11", "found \"ürich.\"", "code points"});
  qa_dataset_write(dir.file("no_answers.jsonl"), R"({"id": "x", "question": "Q?", "context": "abc"})");
  testing::expect_contains(testing::error_text([&] {
                             data::load_question_answering_examples(dir.file("no_answers.jsonl"), {}, true);
                           }),
                           {"no \"answers\" field", "--answer-column"});
  qa_dataset_write(dir.file("no_question.jsonl"), R"({"id": "x", "context": "abc"})");
  testing::expect_contains(testing::error_text([&] {
                             data::load_question_answering_examples(dir.file("no_question.jsonl"), {}, false);
                           }),
                           {"no \"question\" field", "--question-column"});
}

}  // namespace
}  // namespace berth
