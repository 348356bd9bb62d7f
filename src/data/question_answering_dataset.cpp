// Reading SQuAD-style question-answering examples from JSONL (HF datasets' squad layout) or SQuAD's JSON.
#include "berth/data/question_answering_dataset.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/input_file.h"

namespace berth::data {
namespace {

using nlohmann::json;

std::string qa_read_file(const std::string& path) { return read_input_file(path, "question-answering data"); }

// Byte offset of code point `index` (the text's size when past its end).
size_t byte_of_code_point(std::string_view text, size_t index) {
  size_t bytes = 0;
  for (size_t seen = 0; bytes < text.size() && seen < index; ++seen) {
    ++bytes;
    while (bytes < text.size() && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) ++bytes;
  }
  return bytes;
}

std::string qa_string_field(const json& row, const std::string& key, const std::string& where) {
  const auto it = row.find(key);
  BERTH_CHECK(it != row.end(), where, ": no \"", key,
              "\" field. Fix: add it, or name the key that holds it (--",
              key == "question" ? "question" : "context", "-column)");
  BERTH_CHECK(it->is_string(), where, ": \"", key, "\" must be a string, found ", it->dump());
  return it->get<std::string>();
}

// The answers {"text": [...], "answer_start": [...]}, each text checked against the context at its start.
void read_answers(const json& answers, QuestionAnsweringExample& example, const std::string& key,
                  const std::string& where) {
  BERTH_CHECK(answers.is_object() && answers.contains("text") && answers["text"].is_array(), where, ": \"",
              key,
              "\" must be {\"text\": [...], \"answer_start\": [...]} (HF datasets' squad layout), found ",
              answers.dump().substr(0, 200), ". Fix: give the answers' texts and their character starts");
  const auto starts = answers.find("answer_start");
  BERTH_CHECK(starts != answers.end() && starts->is_array() && starts->size() == answers["text"].size(),
              where, ": \"", key, "\" has ", answers["text"].size(), " answer texts but ",
              starts == answers.end() ? "no answer_start" : "answer_start " + starts->dump(),
              ". Fix: give one answer_start (the answer's first character in the context, counted in "
              "characters from 0) per answer text");
  const size_t context_length = code_point_count(example.context);
  for (size_t i = 0; i < starts->size(); ++i) {
    const json& text = answers["text"][i];
    const json& start = (*starts)[i];
    BERTH_CHECK(text.is_string() && start.is_number_unsigned(), where, ": answer ", i,
                " must be a text and a non-negative integer start, found ", text.dump(), " at ",
                start.dump());
    const auto begin = start.get<size_t>();
    const std::string answer = text.get<std::string>();
    const std::string found = code_point_slice(example.context, begin, begin + code_point_count(answer));
    BERTH_CHECK(begin <= context_length && found == answer, where, ": answer ", i, " \"", answer,
                "\" is not at answer_start ", begin, " of the context (", context_length,
                " characters; found \"", found,
                "\" there). Fix: answer_start counts Unicode characters (code points) from 0, as "
                "Python's str indices do; correct it or the answer text");
    example.answer_texts.push_back(answer);
    example.answer_starts.push_back(begin);
  }
}

QuestionAnsweringExample jsonl_example(const json& row, const QuestionAnsweringColumns& columns, bool labeled,
                                       size_t line, size_t index, const std::string& where) {
  BERTH_CHECK(row.is_object(), where, ": expected a JSON object, found ", row.dump().substr(0, 80));
  QuestionAnsweringExample example;
  example.line = line;
  const auto id = row.find(columns.id);
  example.id = id == row.end()   ? std::to_string(index)
               : id->is_string() ? id->get<std::string>()
                                 : id->dump();
  example.question = qa_string_field(row, columns.question, where);
  example.context = qa_string_field(row, columns.context, where);
  if (!labeled) return example;
  const auto answers = row.find(columns.answers);
  BERTH_CHECK(answers != row.end(), where, ": no \"", columns.answers,
              "\" field. Fix: add {\"text\": [...], \"answer_start\": [...]} ([] for none), or name its key "
              "with --answer-column");
  read_answers(*answers, example, columns.answers, where);
  return example;
}

std::vector<QuestionAnsweringExample> read_jsonl_examples(const std::string& path, const std::string& content,
                                                          const QuestionAnsweringColumns& columns,
                                                          bool labeled) {
  std::vector<QuestionAnsweringExample> examples;
  std::istringstream lines(content);
  std::string text;
  for (size_t line = 1; std::getline(lines, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line);
    json row;
    try {
      row = json::parse(text);
    } catch (const json::exception& e) {
      BERTH_FAIL(where, ": not valid JSON (", e.what(), "). Fix: one JSON object per line");
    }
    examples.push_back(jsonl_example(row, columns, labeled, line, examples.size(), where));
  }
  return examples;
}

// SQuAD's layout: answers as [{"text", "answer_start"}], turned into the squad-datasets layout first.
std::vector<QuestionAnsweringExample> read_squad_json(const std::string& path, const std::string& content,
                                                      bool labeled) {
  json root;
  try {
    root = json::parse(content);
  } catch (const json::exception& e) {
    BERTH_FAIL(path, ": not valid JSON (", e.what(), "). Fix: SQuAD's layout or JSONL (.jsonl)");
  }
  BERTH_CHECK(
      root.is_object() && root.contains("data") && root["data"].is_array(), path,
      ": expected SQuAD's layout {\"data\": [{\"paragraphs\": [{\"context\", \"qas\"}]}]}. Fix: convert "
      "it, or give JSONL with one {id, question, context, answers} object a line (.jsonl)");
  std::vector<QuestionAnsweringExample> examples;
  for (const json& article : root["data"]) {
    for (const json& paragraph : article.value("paragraphs", json::array())) {
      for (const json& qa : paragraph.value("qas", json::array())) {
        json row = {{"id", qa.value("id", std::to_string(examples.size()))},
                    {"question", qa.value("question", json())},
                    {"context", paragraph.value("context", json())},
                    {"answers", {{"text", json::array()}, {"answer_start", json::array()}}}};
        for (const json& answer : qa.value("answers", json::array())) {
          row["answers"]["text"].push_back(answer.value("text", json()));
          row["answers"]["answer_start"].push_back(answer.value("answer_start", json()));
        }
        const std::string where = path + ": question " + row["id"].dump();
        examples.push_back(
            jsonl_example(row, QuestionAnsweringColumns{}, labeled, 0, examples.size(), where));
      }
    }
  }
  return examples;
}

}  // namespace

std::vector<QuestionAnsweringExample> load_question_answering_examples(
    const std::string& path, const QuestionAnsweringColumns& columns, bool labeled) {
  const std::string content = qa_read_file(path);
  const bool squad = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::vector<QuestionAnsweringExample> examples =
      squad ? read_squad_json(path, content, labeled) : read_jsonl_examples(path, content, columns, labeled);
  BERTH_CHECK(!examples.empty(), path, ": no examples. Fix: give at least one question with its context");
  return examples;
}

std::string code_point_slice(std::string_view text, size_t begin, size_t end) {
  if (end <= begin) return "";
  const size_t from = byte_of_code_point(text, begin);
  const size_t to = from + byte_of_code_point(text.substr(from), end - begin);
  return std::string(text.substr(from, to - from));
}

size_t code_point_count(std::string_view text) {
  size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace berth::data
