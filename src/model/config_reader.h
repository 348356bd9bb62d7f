// ConfigReader: typed, line-numbered reads of a config.json object, shared by every family's config (an
// internal header: the messages name the file, the line and the field, and say how to fix it).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth::config {

using Json = nlohmann::json;

// Names a field in messages: "dir/config.json:7: hidden_size" when read from a file, "hidden_size" else.
using Where = std::function<std::string(const std::string& field)>;

// "a string", "an integer", ...: a JSON value's kind, for messages.
std::string json_type(const Json& value);

// Parses config.json text into an object; invalid JSON or a non-object throws naming source:line.
Json parse_object(const std::string& text, const std::string& source);

// A Where that finds each top-level field's line in `text`.
Where where_in(std::string text, std::string source);

// Reads the fields of one config.json object, reporting each problem at its field's line. `family` names the
// config in the message for a missing required field ("BERT's config.json must give ...").
class Reader {
 public:
  Reader(const Json& json, const Where& where, std::string family = "this")
      : json_(json), where_(where), family_(std::move(family)) {}

  bool has(const std::string& key) const { return json_.contains(key); }
  void integer(const std::string& key, int64_t& out, bool required = false);
  void optional_integer(const std::string& key, std::optional<int64_t>& out);
  void number(const std::string& key, double& out);
  void optional_number(const std::string& key, std::optional<double>& out);
  void string(const std::string& key, std::string& out);
  void optional_string(const std::string& key, std::optional<std::string>& out);
  void boolean(const std::string& key, bool& out);

 private:
  bool present(const std::string& key, bool required, const char* kind);

  const Json& json_;
  const Where& where_;
  std::string family_;
};

// PretrainedConfig's label fields: num_labels, id2label (ids 0..n-1), label2id; HF's lenient case (num_labels
// disagreeing with id2label) adds a warning.
void read_labels(const Json& json, const Where& where, std::map<int64_t, std::string>& id2label,
                 std::map<std::string, int64_t>& label2id, std::vector<std::string>* warnings);
// HF's num_labels setter: a different count replaces the labels with LABEL_0..LABEL_{n-1}.
void set_num_labels(int64_t count, std::map<int64_t, std::string>& id2label,
                    std::map<std::string, int64_t>& label2id);
void set_labels(const std::vector<std::string>& labels, std::map<int64_t, std::string>& id2label,
                std::map<std::string, int64_t>& label2id);
// Writes the label fields as PretrainedConfig.to_diff_dict does: only when they differ from the defaults.
void write_labels(Json& json, const std::map<int64_t, std::string>& id2label,
                  const std::map<std::string, int64_t>& label2id);

// "architectures": a list of class names, or absent/null.
std::optional<std::vector<std::string>> read_architectures(const Json& json, const Where& where);

// Validation shared by the families.
void check_positive(const Where& where, const char* field, int64_t value, const char* role);
void check_dropout(const Where& where, const char* field, double value);
// problem_type: one of HF's three, and single-label needs two labels or more.
void check_problem_type(const Where& where, const std::optional<std::string>& problem_type,
                        int64_t num_labels);

}  // namespace berth::config
