// tag_words: per-word labels of a token classifier, entities grouped as HF's pipeline groups them.
#include "berth/tasks/word_tagging.h"

#include <torch/torch.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/device/device.h"
#include "berth/model/auto_model.h"
#include "berth/placement/place.h"
#include "berth/tasks/input_limit.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "tasks/prediction_lines.h"

namespace berth::tasks {
namespace {

struct WordRow {
  std::string text;
  std::vector<std::string> words;
  std::vector<std::pair<size_t, size_t>> spans;  // code points of text
};

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

WordRow word_row(const nlohmann::json& line, const std::string& where) {
  WordRow row;
  if (line.contains("tokens")) {
    BERTH_CHECK(line["tokens"].is_array(), where,
                ": \"tokens\" must be a list of words. Fix: [\"EU\", \"rejects\"]");
    for (const auto& word : line["tokens"]) {
      BERTH_CHECK(word.is_string(), where, ": \"tokens\" must hold strings, found ",
                  word.dump().substr(0, 40));
      if (!row.text.empty()) row.text += " ";
      const size_t start = code_points(row.text);
      row.text += word.get<std::string>();
      row.words.push_back(word.get<std::string>());
      row.spans.emplace_back(start, start + code_points(row.words.back()));
    }
    return row;
  }
  BERTH_CHECK(line.contains("text") && line["text"].is_string(), where,
              ": expected {\"text\": \"...\"} or {\"tokens\": [...]}. Fix: one such object per line");
  row.text = line["text"].get<std::string>();
  size_t point = 0;  // code point index of the byte below
  std::string word;
  size_t start = 0;
  for (size_t i = 0; i <= row.text.size(); ++i) {
    const bool end = i == row.text.size();
    const char c = end ? ' ' : row.text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!word.empty()) row.words.push_back(word), row.spans.emplace_back(start, point), word.clear();
    } else {
      if (word.empty()) start = point;
      word += c;
    }
    if (!end && (static_cast<unsigned char>(c) & 0xC0) != 0x80) ++point;
  }
  return row;
}

// HF's group_entities over words: a word joins the entity before it when its type is the same and its tag
// is not B-; O words belong to none.
nlohmann::json group_entities(const nlohmann::json& words, const WordRow& row) {
  nlohmann::json entities = nlohmann::json::array();
  std::string last_type;
  std::vector<double> scores;
  for (const auto& w : words) {
    const std::string label = w["label"];
    const bool begin = label.rfind("B-", 0) == 0;
    const std::string type =
        label.size() > 2 && (begin || label.rfind("I-", 0) == 0) ? label.substr(2) : label;
    if (label == "O") {
      last_type.clear();
      continue;
    }
    if (!entities.empty() && !begin && type == last_type) {
      auto& e = entities.back();
      e["end"] = w["end"];
      scores.push_back(w["score"].get<double>());
    } else {
      entities.push_back({{"entity_group", type}, {"start", w["start"]}, {"end", w["end"]}});
      scores.assign(1, w["score"].get<double>());
    }
    double sum = 0;
    for (double s : scores) sum += s;
    entities.back()["score"] = sum / static_cast<double>(scores.size());
    last_type = type;
  }
  for (auto& e : entities) {  // the entity's text as it stands in the input
    const size_t start = e["start"], end = e["end"];
    size_t point = 0, byte_start = 0, byte_end = row.text.size();
    for (size_t i = 0; i <= row.text.size(); ++i) {
      if (i < row.text.size() && (static_cast<unsigned char>(row.text[i]) & 0xC0) == 0x80) continue;
      if (point == start) byte_start = i;
      if (point == end) byte_end = i;
      ++point;
    }
    e["word"] = row.text.substr(byte_start, byte_end - byte_start);
  }
  return entities;
}

// A token classifier in eval mode on its device, its tokenizer truncating at the window and not padding.
struct WordTagger {
  std::shared_ptr<TaskModel> model;
  tokenizer::Tokenizer tokenizer;
  c10::Device device;
  TaskModelInfo info;
};

WordTagger load_word_tagger(const std::string& model_dir, const std::string& device_name, size_t max_length) {
  const c10::Device device = resolve_device(parse_device(device_name), query_cuda());
  tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(model_dir);
  auto loaded = load_task_model(model_dir, {}, ModelTask::TokenClassification);
  BERTH_CHECK(loaded.report.missing.empty(), "predict: ", model_dir,
              " is not a fine-tuned token classifier (it lacks ",
              loaded.report.missing.empty() ? "" : loaded.report.missing.front(),
              "). Fix: berth train --task token-classification first");
  TaskModel& model = *loaded.model;
  model.module().eval();
  place(model.module(), device, PlacementPolicy::Move);
  const TaskModelInfo info = model.info();
  tokenizer::TruncationOptions truncation;
  truncation.max_length =
      max_length > 0 ? max_length
                     : static_cast<size_t>(model_input_limit(info.max_positions, tokenizer.model_max_length));
  tokenizer.set_truncation(truncation);
  tokenizer.set_padding(std::nullopt);
  return {loaded.model, std::move(tokenizer), device, info};
}

// The row's words, each labelled by its first sub-token (under no_grad).
nlohmann::json tag_row(WordTagger& tagger, const WordRow& row) {
  nlohmann::json words = nlohmann::json::array();
  if (row.words.empty()) return words;
  const tokenizer::Encoding e = tagger.tokenizer.encode_words(row.words);
  Batch batch{{"input_ids", at::tensor(e.ids, at::kLong).unsqueeze(0).to(tagger.device)}};
  const at::Tensor probs =
      tagger.model->forward_batch(batch).logits.to(at::kCPU).to(at::kFloat).softmax(-1)[0];
  int64_t previous = -1;
  for (size_t t = 0; t < e.size(); ++t) {
    const int64_t w = e.word_ids[t];
    if (w < 0 || w == previous) continue;  // the first sub-token speaks for its word
    previous = w;
    const int64_t best = probs[static_cast<int64_t>(t)].argmax().item<int64_t>();
    const auto u = static_cast<size_t>(w);
    words.push_back({{"word", row.words[u]},
                     {"start", row.spans[u].first},
                     {"end", row.spans[u].second},
                     {"label", tagger.info.labels.at(static_cast<size_t>(best))},
                     {"score", probs[static_cast<int64_t>(t)][best].item<double>()}});
  }
  return words;
}

nlohmann::json parse_row_json(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    BERTH_FAIL(where, ": malformed JSON. Fix: one {\"text\": \"...\"} object per line");
  }
}

}  // namespace

size_t tag_words(const std::string& model_dir, const std::string& input, const std::string& output,
                 const std::string& device_name, size_t max_length, std::ostream& out, std::ostream& log) {
  WordTagger tagger = load_word_tagger(model_dir, device_name, max_length);
  std::istringstream in(read_input_file(input, "--input"));
  std::ostringstream lines;
  size_t number = 0, rows = 0;
  torch::NoGradGuard no_grad;
  for (std::string text; std::getline(in, text);) {
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = input + ":" + std::to_string(number);
    const WordRow row = word_row(parse_row_json(text, where), where);
    const nlohmann::json words = tag_row(tagger, row);
    lines << nlohmann::json{{"words", words}, {"entities", group_entities(words, row)}}.dump() << "\n";
    ++rows;
  }
  write_prediction_lines(output, out, log, rows, "rows", [&](std::ostream& to) { to << lines.str(); });
  return rows;
}

}  // namespace berth::tasks
