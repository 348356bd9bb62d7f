// Extractive question-answering data: SQuAD-style examples (id, question, context, answers) read from JSONL
// in HF datasets' squad layout or from SQuAD's own nested JSON file (data[].paragraphs[].qas[]).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace berth::data {

struct QuestionAnsweringExample {
  std::string id;
  std::string question;
  std::string context;
  // The gold answers (empty: unanswerable, SQuAD v2); answer_starts are in Unicode code points of the
  // context, as Python's str indices count them (SQuAD's answer_start).
  std::vector<std::string> answer_texts;
  std::vector<size_t> answer_starts;
  size_t line = 0;  // where the example starts in its file (JSONL line; 0 for SQuAD JSON), for messages
};

// The JSON keys, as run_qa.py's question_column_name, context_column_name and answer_column_name.
struct QuestionAnsweringColumns {
  std::string id = "id";
  std::string question = "question";
  std::string context = "context";
  std::string answers = "answers";  // {"text": [...], "answer_start": [...]}
};

// Reads every example of a .jsonl file (one squad-layout object a line) or a .json file in SQuAD's own
// layout. labeled: every row must have answers whose text stands at its answer_start in the context; else
// answers are not read. A row without an id gets its row number. Any problem throws berth::Error naming the
// file, the line (or the question's id) and the fix.
std::vector<QuestionAnsweringExample> load_question_answering_examples(
    const std::string& path, const QuestionAnsweringColumns& columns, bool labeled);

// The code points [begin, end) of UTF-8 text, clamped to its length as Python's slicing clamps.
std::string code_point_slice(std::string_view text, size_t begin, size_t end);
size_t code_point_count(std::string_view text);

}  // namespace berth::data
