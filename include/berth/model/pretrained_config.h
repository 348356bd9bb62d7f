// PretrainedConfig: any family's config.json, read as transformers' PretrainedConfig reads it: the shared
// label and dtype fields, and the family's own fields read through typed getters that name the file, line and
// field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth {

class PretrainedConfig {
 public:
  // An empty config of `model_type`, for presets; its fields are then set with the set_* calls.
  explicit PretrainedConfig(std::string model_type = "");

  // Parses config.json text; `source` names it in messages ("dir/config.json"). Invalid JSON, a missing or
  // non-string model_type and bad label fields throw berth::Error; HF's lenient cases add to *warnings.
  static PretrainedConfig from_json_text(const std::string& text, const std::string& source = "config.json",
                                         std::vector<std::string>* warnings = nullptr);
  static PretrainedConfig load(const std::string& path, std::vector<std::string>* warnings = nullptr);

  const std::string& model_type() const { return model_type_; }
  // Where it was read from ("" for a config built in code) and the text read, for families whose own
  // readers report lines ("" once a set_* call changed a field).
  const std::string& source() const { return source_; }
  const std::string& text() const { return text_; }
  // A field named for messages: "dir/config.json:7: hidden_size".
  std::string where(const std::string& field) const;

  // The family's fields. A missing field gives `fallback`; no fallback makes it required (an error names it).
  // A wrong JSON type throws naming the field, what was found and the fix.
  bool has(const std::string& field) const;  // present and not null
  int64_t get_int(const std::string& field, std::optional<int64_t> fallback = std::nullopt) const;
  double get_number(const std::string& field, std::optional<double> fallback = std::nullopt) const;
  bool get_bool(const std::string& field, std::optional<bool> fallback = std::nullopt) const;
  std::string get_string(const std::string& field, std::optional<std::string> fallback = std::nullopt) const;
  // null reads as nullopt; an absent field as `fallback`.
  std::optional<int64_t> get_optional_int(const std::string& field, std::optional<int64_t> fallback) const;
  std::optional<double> get_optional_number(const std::string& field, std::optional<double> fallback) const;
  std::optional<std::string> get_optional_string(const std::string& field,
                                                 std::optional<std::string> fallback) const;
  // The field's JSON text as written ("" when absent), for structured fields (rope_scaling, layer_types).
  std::string get_json(const std::string& field) const;

  void set_int(const std::string& field, int64_t value);
  void set_number(const std::string& field, double value);
  void set_bool(const std::string& field, bool value);
  void set_string(const std::string& field, const std::string& value);
  void set_null(const std::string& field);
  void set_json(const std::string& field, const std::string& json_text);  // must parse; throws otherwise

  // Throws berth::Error: "<where(field)> is <found>; berth implements <supported>. Fix: <fix>".
  [[noreturn]] void unsupported(const std::string& field, const std::string& found,
                                const std::string& supported, const std::string& fix) const;

  // PretrainedConfig's own fields. num_labels is id2label's size; the default is LABEL_0, LABEL_1.
  std::map<int64_t, std::string> id2label{{0, "LABEL_0"}, {1, "LABEL_1"}};
  std::map<std::string, int64_t> label2id{{"LABEL_0", 0}, {"LABEL_1", 1}};
  std::optional<std::string> problem_type;  // kRegression, kSingleLabelClassification, ...; null: from labels
  std::optional<std::vector<std::string>> architectures;
  std::optional<std::string> torch_dtype;  // read from "dtype" (transformers 5) or "torch_dtype"

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  // HF's num_labels setter: a different count replaces the labels with LABEL_0..LABEL_{n-1}.
  void set_num_labels(int64_t count);
  void set_labels(const std::vector<std::string>& labels);

  // config.json as transformers' save_pretrained writes it: sorted keys, 2-space indent, ASCII escapes, the
  // label fields only when they differ from the defaults, every family field as read or set.
  std::string to_json_text() const;
  // to_json_text() written to a temporary file next to `path`, then renamed over it.
  void save(const std::string& path) const;

 private:
  std::string model_type_;
  std::string text_;                           // the JSON read, to find a field's line for messages
  std::string source_;                         // "dir/config.json"
  std::map<std::string, std::string> fields_;  // every other field: name -> JSON text
};

}  // namespace berth
