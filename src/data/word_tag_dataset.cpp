// WordTagDataset: JSONL rows of words and tags, run_ner.py's label list and alignment, and the token-label
// collation of DataCollatorForTokenClassification.
#include "berth/data/word_tag_dataset.h"

#include "berth/core/error.h"
#include "berth/core/input_file.h"

#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace berth::data {
namespace {

using nlohmann::json;

std::vector<std::string> read_lines(const std::string& path) {
  std::istringstream in(read_input_file(path, "data file"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (!lines.empty() && lines[0].rfind("\xEF\xBB\xBF", 0) == 0) lines[0].erase(0, 3);
  return lines;
}

bool is_blank_line(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// The list in `column` of a row, checked to be a JSON list.
const json& list_column(const json& row, const std::string& column, const std::string& where) {
  const auto it = row.find(column);
  BERTH_CHECK(
      it != row.end(), where, ": missing \"", column, "\" (found keys: ",
      [&] {
        std::string keys;
        for (const auto& item : row.items()) keys += (keys.empty() ? "" : ", ") + item.key();
        return keys;
      }(),
      "). Fix: name the words and tags columns with --text-column / --label-column");
  BERTH_CHECK(it->is_array(), where, ": \"", column, "\" must be a list (one entry per word), found ",
              it->type_name(), " ", it->dump().substr(0, 60),
              ". Fix: pre-split the text into a JSON list of words, e.g. [\"EU\", \"rejects\"]");
  return *it;
}

struct RawRow {
  WordTagExample example;
  json tags;  // the raw tag list (null when unlabelled)
};

RawRow read_row(const std::string& line, const std::string& where, const WordTagOptions& options) {
  json row;
  try {
    row = json::parse(line);
  } catch (const json::exception&) {
    BERTH_FAIL(where, ": malformed JSON. Fix: each line must be one JSON object, e.g. {\"",
               options.tokens_column, "\": [\"EU\", \"rejects\"], \"", options.tags_column,
               "\": [\"B-ORG\", \"O\"]}");
  }
  BERTH_CHECK(row.is_object(), where, ": expected a JSON object, found ", row.type_name());
  RawRow raw;
  raw.example.line = static_cast<size_t>(std::stoul(where.substr(where.rfind(':') + 1)));
  for (const json& word : list_column(row, options.tokens_column, where)) {
    BERTH_CHECK(word.is_string(), where, ": \"", options.tokens_column, "\" must hold strings, found ",
                word.dump().substr(0, 40), ". Fix: write every word as a JSON string");
    raw.example.words.push_back(word.get<std::string>());
  }
  if (!options.labeled) return raw;
  raw.tags = list_column(row, options.tags_column, where);
  BERTH_CHECK(raw.tags.size() == raw.example.words.size(), where, ": ", raw.tags.size(), " tags (\"",
              options.tags_column, "\") for ", raw.example.words.size(), " words (\"", options.tokens_column,
              "\"). Fix: give exactly one tag per word");
  return raw;
}

// A tag's id: a name in the label map, or an integer index into it.
int64_t tag_id(const json& tag, const LabelMap& labels, bool fixed, const std::string& where) {
  if (tag.is_number_integer()) {
    BERTH_CHECK(fixed, where, ": integer tag ", tag.dump(),
                " but no label list to index (the model's config.json has no id2label). Fix: write the tags "
                "as names (\"B-PER\"), or fine-tune a model whose config.json lists its labels");
    const auto id = tag.get<int64_t>();
    BERTH_CHECK(id >= 0 && id < static_cast<int64_t>(labels.size()), where, ": tag ", id,
                " is outside the model's ", labels.size(), " labels (", labels.describe(),
                "). Fix: use ids 0..", labels.size() - 1, " or the names");
    return id;
  }
  BERTH_CHECK(tag.is_string(), where, ": a tag must be a name or an integer id, found ",
              tag.dump().substr(0, 40));
  const std::optional<int64_t> id = labels.find(tag.get<std::string>());
  BERTH_CHECK(id.has_value(), where, ": unknown tag \"", tag.get<std::string>(), "\"; the labels are ",
              labels.describe(),
              ". Fix: use one of those, or train a new head (from a checkpoint without these labels)");
  return *id;
}

}  // namespace

WordTagDataset WordTagDataset::load(const std::string& path, const WordTagOptions& options) {
  std::vector<RawRow> rows;
  const std::vector<std::string> lines = read_lines(path);
  for (size_t i = 0; i < lines.size(); ++i)
    if (!is_blank_line(lines[i]))
      rows.push_back(read_row(lines[i], path + ":" + std::to_string(i + 1), options));
  BERTH_CHECK(!rows.empty(), path, ": no rows. Fix: one JSON object per line with \"", options.tokens_column,
              "\" and \"", options.tags_column, "\" lists");
  LabelMap labels;
  if (options.label_map) {
    labels = *options.label_map;
  } else if (options.labeled) {
    std::set<std::string> names;  // get_label_list: the sorted unique tags
    for (const RawRow& row : rows)
      for (const json& tag : row.tags)
        if (tag.is_string()) names.insert(tag.get<std::string>());
    labels = LabelMap(std::vector<std::string>(names.begin(), names.end()));
  }
  std::vector<WordTagExample> examples;
  for (RawRow& row : rows) {
    const std::string where = path + ":" + std::to_string(row.example.line);
    if (options.labeled)
      for (const json& tag : row.tags)
        row.example.tags.push_back(tag_id(tag, labels, options.label_map.has_value(), where));
    examples.push_back(std::move(row.example));
  }
  return WordTagDataset(std::move(examples), std::move(labels));
}

std::vector<int64_t> align_word_tags(const std::vector<int64_t>& word_ids, const std::vector<int64_t>& tags) {
  std::vector<int64_t> out;
  out.reserve(word_ids.size());
  int64_t previous = -1;
  for (int64_t word : word_ids) {
    if (word < 0 || word == previous) {
      out.push_back(-100);
    } else {
      BERTH_BUG(word < static_cast<int64_t>(tags.size()), "a word id past the row's tags");
      out.push_back(tags[static_cast<size_t>(word)]);
    }
    previous = word;
  }
  return out;
}

TokenizedDataset encode_word_tags(const WordTagDataset& dataset, const tokenizer::Tokenizer& tokenizer,
                                  size_t max_length) {
  tokenizer::Tokenizer truncating = tokenizer;
  tokenizer::TruncationOptions truncation;
  truncation.max_length = max_length;
  truncating.set_truncation(truncation);
  truncating.set_padding(std::nullopt);
  std::vector<tokenizer::Encoding> encodings;
  size_t longest = 0;
  for (const WordTagExample& example : dataset.examples()) {
    encodings.push_back(truncating.encode_words(example.words));
    longest = std::max(longest, encodings.back().size());
  }
  const bool labeled = !dataset.examples().empty() && !dataset.examples().front().tags.empty();
  if (!labeled) return TokenizedDataset(std::move(encodings), at::Tensor());
  // (N, L): -100 past each row's end.
  at::Tensor labels =
      at::full({static_cast<int64_t>(encodings.size()), static_cast<int64_t>(longest)}, -100, at::kLong);
  for (size_t row = 0; row < encodings.size(); ++row) {
    const std::vector<int64_t> aligned =
        align_word_tags(encodings[row].word_ids, dataset.examples()[row].tags);
    std::copy(aligned.begin(), aligned.end(), labels[static_cast<int64_t>(row)].data_ptr<int64_t>());
  }
  return TokenizedDataset(std::move(encodings), labels);
}

at::Tensor collate_token_labels(const at::Tensor& labels, const std::vector<size_t>& rows, int64_t length) {
  std::vector<int64_t> index(rows.begin(), rows.end());
  const at::Tensor picked = labels.index_select(0, at::tensor(index, at::kLong));  // (B, L)
  at::Tensor out = at::full({picked.size(0), length}, -100, at::kLong);
  const int64_t kept = std::min(length, picked.size(1));
  out.narrow(1, 0, kept).copy_(picked.narrow(1, 0, kept));
  return out;
}

}  // namespace berth::data
