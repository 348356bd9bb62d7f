// Loading text classification data from JSONL, CSV and TSV, and writing it back as JSONL.
#include "berth/data/text_dataset.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/data/delimited_reader.h"
#include "core/utf8_check.h"

namespace berth::data {
namespace {

using nlohmann::json;

// One example as read, before its label is mapped to ids.
struct RawExample {
  size_t line = 0;
  std::string text;
  std::optional<std::string> text_pair;
  json label;  // null when unlabelled
};

bool ends_with(const std::string& text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  std::string tail = text.substr(text.size() - suffix.size());
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
  return tail == suffix;
}

TextFormat detect_format(const std::string& path, TextFormat format) {
  if (format != TextFormat::Auto) return format;
  if (ends_with(path, ".jsonl") || ends_with(path, ".ndjson")) return TextFormat::Jsonl;
  if (ends_with(path, ".csv")) return TextFormat::Csv;
  if (ends_with(path, ".tsv") || ends_with(path, ".tab")) return TextFormat::Tsv;
  BERTH_FAIL(path,
             ": cannot tell the format from the extension: expected .jsonl, .ndjson, .csv, .tsv or .tab. "
             "Fix: rename the file or choose the format (jsonl, csv or tsv) explicitly");
}

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest says where and what.
std::string json_reason(const json::exception& e) {
  std::string what = e.what();
  size_t close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

std::string check_text(std::string value, const std::string& where, const std::string& column) {
  BERTH_CHECK(!is_blank(value), where, ": \"", column,
              "\" is empty; every example needs a text to classify. Fix: fill it in or remove the example");
  return value;
}

std::vector<RawExample> read_jsonl(const std::string& path, std::string_view content,
                                   const TextDatasetOptions& options) {
  if (content.substr(0, 3) == "\xEF\xBB\xBF") content.remove_prefix(3);
  std::vector<RawExample> examples;
  size_t line_number = 0;
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (is_blank(line)) continue;
    const std::string where = path + ":" + std::to_string(line_number);
    json object;
    try {
      object = json::parse(line);
    } catch (const json::exception& e) {
      BERTH_FAIL(where, ": malformed JSON (", json_reason(e),
                 "). Fix: each line must be one complete JSON object, e.g. {\"", options.text_column,
                 "\": \"...\", \"", options.label_column, "\": \"...\"}");
    }
    BERTH_CHECK(object.is_object(), where, ": expected a JSON object, found ", object.type_name(),
                ". Fix: each line must be an object such as {\"", options.text_column, "\": \"...\"}");
    auto text_field = [&](const std::string& column) {
      auto it = object.find(column);
      BERTH_CHECK(
          it != object.end(), where, ": missing \"", column, "\" (found keys: ",
          [&] {
            std::string keys;
            for (const auto& item : object.items()) keys += (keys.empty() ? "" : ", ") + item.key();
            return keys.empty() ? std::string("none") : keys;
          }(),
          "). Fix: add it to every line, or name the field that holds the text");
      BERTH_CHECK(it->is_string(), where, ": \"", column, "\" must be a string, found ", it->type_name(), " ",
                  it->dump(), ". Fix: write the text as a JSON string");
      return check_text(it->get<std::string>(), where, column);
    };
    RawExample example;
    example.line = line_number;
    example.text = text_field(options.text_column);
    if (options.text_pair_column) example.text_pair = text_field(*options.text_pair_column);
    if (options.labeled) {
      auto it = object.find(options.label_column);
      BERTH_CHECK(it != object.end() && !it->is_null(), where, ": missing label \"", options.label_column,
                  "\". Fix: give every example a label, or name the field that holds it");
      example.label = *it;
    }
    examples.push_back(std::move(example));
  }
  return examples;
}

std::vector<RawExample> read_delimited(const std::string& path, std::string_view content,
                                       const TextDatasetOptions& options, char delimiter, Quoting quoting) {
  if (const std::optional<size_t> bad = text::first_invalid_utf8(content)) {
    const auto line =
        1 + std::count(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(*bad), '\n');
    BERTH_FAIL(path, ":", line, ": expected UTF-8 text, found the byte ", text::byte_hex(content[*bad]),
               " (byte offset ", *bad, "). Fix: save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)");
  }
  std::vector<DelimitedRecord> records = parse_delimited(content, delimiter, quoting, path);
  BERTH_CHECK(!records.empty(), path,
              ": no header row found (the file is empty). Fix: start the file with "
              "the column names, e.g. ",
              options.text_column, delimiter == '\t' ? "\\t" : ",", options.label_column);
  const std::vector<std::string>& header = records[0].fields;
  const std::string separator = delimiter == '\t' ? "\\t" : std::string(1, delimiter);
  auto column_index = [&](const std::string& name) -> size_t {
    auto it = std::find(header.begin(), header.end(), name);
    if (it != header.end()) return static_cast<size_t>(it - header.begin());
    std::string names;
    for (const auto& h : header) names += (names.empty() ? "" : ", ") + ("\"" + h + "\"");
    BERTH_FAIL(path, ":", records[0].line, ": expected a column \"", name, "\" in the header, found ", names,
               ". Fix: add the column, or name the column that holds it");
  };
  const size_t text_index = column_index(options.text_column);
  // A sentinel rather than std::optional: GCC 12 warns (wrongly) that an optional index may be uninitialized.
  constexpr size_t kAbsent = static_cast<size_t>(-1);
  const size_t pair_index = options.text_pair_column ? column_index(*options.text_pair_column) : kAbsent;
  const size_t label_index = options.labeled ? column_index(options.label_column) : kAbsent;

  std::vector<RawExample> examples;
  for (size_t r = 1; r < records.size(); ++r) {
    const DelimitedRecord& record = records[r];
    const std::string where = path + ":" + std::to_string(record.line);
    BERTH_CHECK(
        record.fields.size() == header.size(), where, ": expected ", header.size(),
        " fields as in the header, found ", record.fields.size(), ". Fix: ",
        quoting == Quoting::Rfc4180
            ? "quote fields that contain '" + separator + "' (\"a, b\"), and write a quote inside as \"\""
            : std::string("a TSV field cannot hold a tab; replace tabs inside texts with spaces"));
    RawExample example;
    example.line = record.line;
    example.text = check_text(record.fields[text_index], where, options.text_column);
    if (pair_index != kAbsent)
      example.text_pair = check_text(record.fields[pair_index], where, *options.text_pair_column);
    if (label_index != kAbsent) {
      const std::string& cell = record.fields[label_index];
      BERTH_CHECK(!is_blank(cell), where, ": missing label (column \"", options.label_column,
                  "\" is empty). Fix: give every example a label");
      if (options.problem_type == ProblemType::MultiLabel) {
        try {
          example.label = json::parse(cell);
        } catch (const json::exception& e) {
          BERTH_FAIL(where, ": expected a JSON list of labels in \"", options.label_column, "\", found ",
                     cell, " (", json_reason(e),
                     "). Fix: write the labels as [\"a\", \"b\"] (quoted in CSV: "
                     "\"[\"\"a\"\", \"\"b\"\"]\")");
        }
      } else if (options.problem_type == ProblemType::Regression) {
        char* end = nullptr;
        const double value = std::strtod(cell.c_str(), &end);
        BERTH_CHECK(end != cell.c_str() && is_blank(end), where,
                    ": expected a number for the regression "
                    "target \"",
                    options.label_column, "\", found '", cell, "'. Fix: write a number such as 0.5");
        example.label = value;
      } else {
        example.label = cell;
      }
    }
    examples.push_back(std::move(example));
  }
  return examples;
}

// The name of a single-label label: strings as they are, integers in decimal.
// A label as the file writes it: a name, or an integer (HF datasets' ClassLabel index, or a name that is
// a number: berth's own labels from integer data are "0", "1", ...).
struct WrittenLabel {
  std::string name;
  bool integer = false;
};

WrittenLabel label_name(const json& label, const std::string& where, const std::string& column) {
  if (label.is_string()) {
    BERTH_CHECK(!label.get<std::string>().empty(), where, ": label \"", column,
                "\" is an empty string. Fix: give every example a label");
    return {label.get<std::string>(), false};
  }
  if (label.is_number_integer()) return {label.dump(), true};
  BERTH_FAIL(where, ": expected a label name (string) or class id (integer) in \"", column, "\", found ",
             label.type_name(), " ", label.dump(),
             ". Fix: use strings or integers; numbers with fractions are regression targets (problem type "
             "regression), lists are multi-label (problem type multi_label_classification)");
}

// A label's class id: a name is looked up in `label_map`; an integer is first a name there (the map of a
// model trained on integer labels), else its class index, as HF datasets' ClassLabel integers are (a
// checkpoint's id2label of LABEL_0/LABEL_1 or NEGATIVE/POSITIVE and a file of 0/1).
int64_t label_id(const LabelMap& label_map, const WrittenLabel& label, const std::string& where) {
  if (std::optional<int64_t> id = label_map.find(label.name)) return *id;
  const int64_t classes = static_cast<int64_t>(label_map.size());
  if (label.integer) {
    // Integers too long for int64 are outside any class range (-1 stands for them).
    const int64_t index = label.name.size() <= 18 ? std::stoll(label.name) : -1;
    BERTH_CHECK(index >= 0 && index < classes, where, ": label ", label.name, " is not one of the labels (",
                label_map.describe(),
                ") and, as a class index (HF datasets' "
                "ClassLabel), it is outside the ",
                classes, " classes 0..", classes - 1, ". Fix: use class indices 0..", classes - 1,
                " or the label names, or a model (config.json id2label) with this class");
    return index;
  }
  BERTH_FAIL(where, ": unknown label '", label.name, "'; the known labels are: ", label_map.describe(),
             ". Fix: correct the label, or use a label map (e.g. the model's config.json id2label) that "
             "includes it");
}

}  // namespace

ProblemType parse_problem_type(std::string_view text) {
  if (text == "single_label_classification") return ProblemType::SingleLabel;
  if (text == "multi_label_classification") return ProblemType::MultiLabel;
  if (text == "regression") return ProblemType::Regression;
  BERTH_FAIL("unknown problem type '", text,
             "'. Fix: use single_label_classification, multi_label_classification or regression");
}

std::string to_string(ProblemType type) {
  switch (type) {
    case ProblemType::SingleLabel:
      return "single_label_classification";
    case ProblemType::MultiLabel:
      return "multi_label_classification";
    case ProblemType::Regression:
      return "regression";
  }
  BERTH_BUG(false, "unknown ProblemType ", static_cast<int>(type));
  return "";
}

TextDataset TextDataset::load(const std::string& path, const TextDatasetOptions& options) {
  const std::string content = read_input_file(path, "data file");
  std::vector<RawExample> raw;
  switch (detect_format(path, options.format)) {
    case TextFormat::Jsonl:
      raw = read_jsonl(path, content, options);
      break;
    case TextFormat::Csv:
      raw = read_delimited(path, content, options, ',', Quoting::Rfc4180);
      break;
    case TextFormat::Tsv:
      raw = read_delimited(path, content, options, '\t', Quoting::None);
      break;
    case TextFormat::Auto:
      BERTH_BUG(false, "format left undetected");
  }
  BERTH_CHECK(!raw.empty(), path,
              ": no examples found. Fix: add examples (JSONL: one object per line; "
              "CSV/TSV: rows after the header)");

  const std::string& column = options.label_column;
  const bool classification = options.labeled && options.problem_type != ProblemType::Regression;
  // Label names per example (several for multi-label), checked for kind before any id is given.
  std::vector<std::vector<WrittenLabel>> names(raw.size());
  if (classification) {
    for (size_t i = 0; i < raw.size(); ++i) {
      const std::string where = path + ":" + std::to_string(raw[i].line);
      if (options.problem_type == ProblemType::MultiLabel) {
        BERTH_CHECK(
            raw[i].label.is_array(), where, ": expected a list of labels in \"", column, "\", found ",
            raw[i].label.type_name(), " ", raw[i].label.dump(),
            ". Fix: multi-label examples hold a JSON list such as [\"sports\", \"politics\"] (or [] for "
            "none)");
        for (const json& item : raw[i].label) names[i].push_back(label_name(item, where, column));
      } else {
        names[i].push_back(label_name(raw[i].label, where, column));
      }
    }
  }

  LabelMap label_map;
  if (options.label_map) {
    label_map = *options.label_map;
  } else if (classification) {
    std::vector<std::string> all;
    for (const auto& example_names : names)
      for (const WrittenLabel& label : example_names) all.push_back(label.name);
    label_map = LabelMap::from_observed(all);
  }

  std::vector<TextExample> examples;
  examples.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string where = path + ":" + std::to_string(raw[i].line);
    TextExample example;
    example.text = std::move(raw[i].text);
    example.text_pair = std::move(raw[i].text_pair);
    example.line = raw[i].line;
    if (options.labeled && options.problem_type == ProblemType::Regression) {
      BERTH_CHECK(raw[i].label.is_number(), where, ": expected a number for the regression target \"", column,
                  "\", found ", raw[i].label.type_name(), " ", raw[i].label.dump(),
                  ". Fix: write the target as a JSON number such as 0.5");
      example.value = raw[i].label.get<double>();
      BERTH_CHECK(std::isfinite(example.value), where, ": regression target ", raw[i].label.dump(),
                  " is not finite. Fix: use a finite number");
    }
    for (const WrittenLabel& label : names[i]) {
      const int64_t id = label_id(label_map, label, where);
      if (options.problem_type == ProblemType::MultiLabel) {
        example.labels.push_back(id);
      } else {
        example.label = id;
      }
    }
    std::sort(example.labels.begin(), example.labels.end());
    example.labels.erase(std::unique(example.labels.begin(), example.labels.end()), example.labels.end());
    examples.push_back(std::move(example));
  }
  return TextDataset(std::move(examples), std::move(label_map), options.problem_type);
}

void write_jsonl(const std::string& path, const std::vector<TextExample>& examples, const LabelMap& label_map,
                 ProblemType problem_type) {
  write_file_atomically(path, [&](std::ostream& out) {
    for (const TextExample& example : examples) {
      nlohmann::ordered_json line;
      line["text"] = example.text;
      if (example.text_pair) line["text_pair"] = *example.text_pair;
      switch (problem_type) {
        case ProblemType::SingleLabel:
          if (example.label >= 0) line["label"] = label_map.label(example.label);
          break;
        case ProblemType::MultiLabel: {
          nlohmann::ordered_json names = nlohmann::ordered_json::array();
          for (int64_t id : example.labels) names.push_back(label_map.label(id));
          line["label"] = names;
          break;
        }
        case ProblemType::Regression:
          line["label"] = example.value;
          break;
      }
      // Invalid UTF-8 becomes U+FFFD rather than an exception halfway through the file.
      out << line.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    }
  });
}

}  // namespace berth::data
