// ConfigReader: typed, line-numbered reads of config.json fields and PretrainedConfig's label fields.
#include "model/config_reader.h"

#include "berth/core/error.h"
#include "berth/model/problem_type.h"
#include "core/text.h"

#include <algorithm>

namespace berth::config {
namespace {

// 1-based line of byte `offset` in `text`.
int line_at(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// The line where `"key"` is followed by a colon: good enough to point a user at a top-level field.
std::optional<int> line_of_key(const std::string& text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  for (std::size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    std::size_t next = at + quoted.size();
    while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
    if (next < text.size() && text[next] == ':') return line_at(text, at);
  }
  return std::nullopt;
}

}  // namespace

std::string json_type(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number_integer() || value.is_number_unsigned()) return "an integer";
  if (value.is_number_float()) return "a number with a fraction";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "a list";
  return "an object";
}

Json parse_object(const std::string& text, const std::string& source) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    BERTH_FAIL(source, ":", line_at(text, e.byte > 0 ? e.byte - 1 : 0), ": not valid JSON (", e.what(),
               "). Fix: repair the file, or copy config.json again from the checkpoint");
  } catch (const Json::exception& e) {  // out_of_range: a number beyond a double, such as 1e400
    BERTH_FAIL(source, ": not valid JSON (", e.what(),
               "). Fix: repair the file, or copy config.json again from the checkpoint");
  }
  BERTH_CHECK(json.is_object(), source, ":1: config.json must hold one JSON object ({...}), found ",
              json_type(json));
  return json;
}

Where where_in(std::string text, std::string source) {
  return [text = std::move(text), source = std::move(source)](const std::string& field) {
    std::optional<int> line = line_of_key(text, field);
    return source + (line ? ":" + std::to_string(*line) : "") + ": " + field;
  };
}

void Reader::integer(const std::string& key, int64_t& out, bool required) {
  if (!present(key, required, "an integer")) return;
  const Json& value = json_.at(key);
  BERTH_CHECK(value.is_number_integer() || value.is_number_unsigned(), where_(key),
              " must be an integer, found ", json_type(value), " (", value.dump(),
              "). Fix: write it as a whole number, e.g. \"", key, "\": ", out);
  out = value.get<int64_t>();
}

void Reader::optional_integer(const std::string& key, std::optional<int64_t>& out) {
  if (!has(key)) return;
  if (json_.at(key).is_null()) {
    out.reset();
    return;
  }
  int64_t value = out.value_or(0);
  integer(key, value);
  out = value;
}

void Reader::number(const std::string& key, double& out) {
  if (!present(key, false, "a number")) return;
  const Json& value = json_.at(key);
  BERTH_CHECK(value.is_number(), where_(key), " must be a number, found ", json_type(value), " (",
              value.dump(), "). Fix: write it as a number, e.g. \"", key, "\": ", Json(out).dump());
  out = value.get<double>();
}

void Reader::optional_number(const std::string& key, std::optional<double>& out) {
  if (!has(key)) return;
  if (json_.at(key).is_null()) {
    out.reset();
    return;
  }
  double value = 0;
  number(key, value);
  out = value;
}

void Reader::string(const std::string& key, std::string& out) {
  if (!present(key, false, "a string")) return;
  const Json& value = json_.at(key);
  BERTH_CHECK(value.is_string(), where_(key), " must be a string, found ", json_type(value), " (",
              value.dump(), "). Fix: write it in quotes, e.g. \"", key, "\": \"", out, "\"");
  out = value.get<std::string>();
}

void Reader::optional_string(const std::string& key, std::optional<std::string>& out) {
  if (!has(key)) return;
  if (json_.at(key).is_null()) {
    out.reset();
    return;
  }
  std::string value;
  string(key, value);
  out = value;
}

void Reader::boolean(const std::string& key, bool& out) {
  if (!present(key, false, "true or false")) return;
  const Json& value = json_.at(key);
  BERTH_CHECK(value.is_boolean(), where_(key), " must be true or false, found ", json_type(value), " (",
              value.dump(), ")");
  out = value.get<bool>();
}

bool Reader::present(const std::string& key, bool required, const char* kind) {
  if (!has(key)) {
    BERTH_CHECK(!required, where_(key), " is missing: ", family_, " config.json must give ", key, " (", kind,
                "). Fix: add \"", key,
                "\" to config.json, e.g. from the config of the checkpoint the weights came "
                "from");
    return false;
  }
  return true;
}

void read_labels(const Json& json, const Where& where, std::map<int64_t, std::string>& id2label_out,
                 std::map<std::string, int64_t>& label2id_out, std::vector<std::string>* warnings) {
  std::optional<int64_t> num_labels;
  if (json.contains("num_labels") && !json.at("num_labels").is_null()) {
    int64_t value = 0;
    Reader(json, where).integer("num_labels", value);
    BERTH_CHECK(value >= 1, where("num_labels"), " (", value,
                ") must be at least 1: the classifier needs one output per label. Fix: set num_labels to 1 "
                "(regression) or the number of classes");
    num_labels = value;
  }
  const bool has_id2label = json.contains("id2label") && !json.at("id2label").is_null();
  if (has_id2label) {
    const Json& id2label = json.at("id2label");
    BERTH_CHECK(id2label.is_object(), where("id2label"),
                " must be an object mapping label ids to names, found ", json_type(id2label),
                ". Fix: write e.g. \"id2label\": {\"0\": \"ham\", \"1\": \"spam\"}");
    std::map<int64_t, std::string> labels;
    for (const auto& [key, name] : id2label.items()) {
      // JSON keys are strings; HF turns them back into ints with int(key).
      std::size_t used = 0;
      int64_t id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      BERTH_CHECK(
          used == key.size() && !key.empty(), where("id2label"), " key \"", key,
          "\" is not a label id: keys must be the integers 0..num_labels-1 written as strings, e.g. \"0\"");
      BERTH_CHECK(name.is_string(), where("id2label"), " entry \"", key,
                  "\" must be a label name (a string), found ", json_type(name), " (", name.dump(), ")");
      labels[id] = name.get<std::string>();
    }
    BERTH_CHECK(!labels.empty(), where("id2label"),
                " is empty: a classifier needs at least one label. Fix: remove id2label (2 labels by "
                "default) or list "
                "the labels");
    int64_t expected = 0;
    for (const auto& [id, name] : labels) {
      BERTH_CHECK(id == expected, where("id2label"), " has ids ", labels.begin()->first, "..",
                  labels.rbegin()->first, " with ", expected, " missing: ids must be 0..", labels.size() - 1,
                  ", one per classifier output. Fix: number the labels from 0 without gaps");
      ++expected;
    }
    id2label_out = labels;
    if (num_labels && *num_labels != static_cast<int64_t>(id2label_out.size()) && warnings) {
      warnings->push_back("You passed `num_labels=" + std::to_string(*num_labels) +
                          "` which is incompatible to the `id2label` map of length `" +
                          std::to_string(static_cast<int64_t>(id2label_out.size())) + "`.");
    }
  } else {
    set_num_labels(num_labels.value_or(2), id2label_out, label2id_out);
  }

  if (json.contains("label2id") && !json.at("label2id").is_null()) {
    const Json& label2id = json.at("label2id");
    BERTH_CHECK(label2id.is_object(), where("label2id"),
                " must be an object mapping label names to ids, found ", json_type(label2id),
                ". Fix: write e.g. \"label2id\": {\"ham\": 0, \"spam\": 1}");
    std::map<std::string, int64_t> ids;
    for (const auto& [name, id] : label2id.items()) {
      BERTH_CHECK(id.is_number_integer() || id.is_number_unsigned(), where("label2id"), " entry \"", name,
                  "\" must be a label id (an integer), found ", json_type(id), " (", id.dump(), ")");
      ids[name] = id.get<int64_t>();
    }
    label2id_out = ids;
  } else if (has_id2label) {
    label2id_out.clear();
    for (const auto& [id, name] : id2label_out) label2id_out[name] = id;
  }
}

void set_num_labels(int64_t count, std::map<int64_t, std::string>& id2label,
                    std::map<std::string, int64_t>& label2id) {
  BERTH_CHECK(count >= 1, "num_labels (", count,
              ") must be at least 1: the classifier needs one output per label");
  if (count == static_cast<int64_t>(id2label.size())) return;
  id2label.clear();
  label2id.clear();
  for (int64_t i = 0; i < count; ++i) {
    id2label[i] = "LABEL_" + std::to_string(i);
    label2id[id2label[i]] = i;
  }
}

void set_labels(const std::vector<std::string>& labels, std::map<int64_t, std::string>& id2label,
                std::map<std::string, int64_t>& label2id) {
  BERTH_CHECK(!labels.empty(), "set_labels: a classifier needs at least one label, found none");
  id2label.clear();
  label2id.clear();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    id2label[static_cast<int64_t>(i)] = labels[i];
    label2id[labels[i]] = static_cast<int64_t>(i);
  }
}

void write_labels(Json& json, const std::map<int64_t, std::string>& id2label,
                  const std::map<std::string, int64_t>& label2id) {
  const std::map<int64_t, std::string> default_id2label{{0, "LABEL_0"}, {1, "LABEL_1"}};
  const std::map<std::string, int64_t> default_label2id{{"LABEL_0", 0}, {"LABEL_1", 1}};
  if (id2label != default_id2label) {
    Json labels = Json::object();
    for (const auto& [id, name] : id2label) labels[std::to_string(id)] = name;
    json["id2label"] = labels;
  }
  if (label2id != default_label2id) json["label2id"] = label2id;
}

std::optional<std::vector<std::string>> read_architectures(const Json& json, const Where& where) {
  if (!json.contains("architectures") || json.at("architectures").is_null()) return std::nullopt;
  const Json& list = json.at("architectures");
  bool strings = list.is_array();
  for (const Json& item : list) strings = strings && item.is_string();
  BERTH_CHECK(strings, where("architectures"), " must be a list of class names, found ", list.dump(),
              ". Fix: write e.g. \"architectures\": [\"BertForSequenceClassification\"]");
  return list.get<std::vector<std::string>>();
}

void check_positive(const Where& where, const char* field, int64_t value, const char* role) {
  BERTH_CHECK(value > 0, where(field), " (", value, ") must be positive: it is ", role,
              ". Fix: use the value from the checkpoint's own config.json");
}

void check_dropout(const Where& where, const char* field, double value) {
  BERTH_CHECK(
      value >= 0.0 && value < 1.0, where(field), " (", value,
      ") must be in [0, 1): it is the probability of zeroing an activation in training. Fix: use e.g. 0.1, "
      "or 0 for no dropout");
}

void check_problem_type(const Where& where, const std::optional<std::string>& problem_type,
                        int64_t num_labels) {
  static const std::vector<std::string> kProblemTypes = {kRegression, kSingleLabelClassification,
                                                         kMultiLabelClassification};
  if (!problem_type) return;
  BERTH_CHECK(std::find(kProblemTypes.begin(), kProblemTypes.end(), *problem_type) != kProblemTypes.end(),
              where("problem_type"), " \"", *problem_type, "\" is not one of ",
              text::join(kProblemTypes, ", "),
              ". Fix: use one of those, or null to choose from the labels as HF does");
  BERTH_CHECK(!(*problem_type == kSingleLabelClassification && num_labels == 1), where("problem_type"),
              " \"single_label_classification\" requires num_labels > 1, found 1 label. Fix: for binary "
              "classification use 2 labels, or use problem_type \"regression\" for a single-output head");
}

}  // namespace berth::config
