// read_text_inputs: JSONL of {"text", "text_pair"?} objects, each error pinned to its line.
#include "berth/data/text_inputs.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/tokenizer/aligned_text.h"

namespace berth::data {

std::vector<TextInputLine> read_text_inputs(const std::string& path) {
  std::istringstream in(
      read_input_file(path, "--input", "pass a JSONL file with one {\"text\": ...} per line"));
  std::vector<TextInputLine> lines;
  std::string text;
  size_t number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines carry no input
    try {
      tokenizer::AlignedText::from_utf8(text);  // names the first byte that is not UTF-8
    } catch (const Error& e) {
      BERTH_FAIL(path, ":", number, ": ", e.what());
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      BERTH_FAIL(path, ":", number, ": not valid JSON (", e.what(),
                 "). Expected one object per line: {\"text\": \"...\", \"text_pair\": \"...\"}");
    }
    BERTH_CHECK(j.is_object() && j.contains("text") && j["text"].is_string(), path, ":", number,
                ": expected an object with a string \"text\" (and optionally \"text_pair\"), found ",
                j.dump().substr(0, 200));
    TextInputLine line{number, {j["text"].get<std::string>(), std::nullopt}};
    if (j.contains("text_pair") && !j["text_pair"].is_null()) {
      BERTH_CHECK(j["text_pair"].is_string(), path, ":", number, ": \"text_pair\" must be a string, found ",
                  j["text_pair"].dump().substr(0, 200));
      line.input.text_pair = j["text_pair"].get<std::string>();
    }
    lines.push_back(std::move(line));
  }
  // An empty result would look like success: an empty file is a wrong path or an unfinished export.
  BERTH_CHECK(!lines.empty(), "--input ", path,
              ": expected JSONL lines ({\"text\": ...} each), found no line with text. Fix: check the "
              "file, or pass the one that holds the inputs");
  return lines;
}

std::vector<tokenizer::EncodeInput> encode_inputs(const std::vector<TextInputLine>& lines) {
  std::vector<tokenizer::EncodeInput> inputs;
  inputs.reserve(lines.size());
  for (const TextInputLine& line : lines) inputs.push_back(line.input);
  return inputs;
}

}  // namespace berth::data
