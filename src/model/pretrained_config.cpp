// PretrainedConfig: any family's config.json, its shared fields parsed, the family's kept as JSON text and
// read through typed getters.
#include "berth/model/pretrained_config.h"
#include "berth/core/input_file.h"

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "model/config_reader.h"

#include <fstream>
#include <set>
#include <sstream>

namespace berth {
namespace {

using config::Json;

// Fields PretrainedConfig itself owns; everything else is the family's.
const std::set<std::string>& shared_fields() {
  static const std::set<std::string> fields = {
      "model_type", "id2label", "label2id", "num_labels", "problem_type", "architectures", "torch_dtype",
      "dtype",
      // Written by whichever transformers saved the file; berth writes none (it is not transformers).
      "transformers_version"};
  return fields;
}

}  // namespace

PretrainedConfig::PretrainedConfig(std::string model_type) : model_type_(std::move(model_type)) {}

PretrainedConfig PretrainedConfig::from_json_text(const std::string& text, const std::string& source,
                                                  std::vector<std::string>* warnings) {
  const Json json = config::parse_object(text, source);
  const config::Where where = config::where_in(text, source);
  config::Reader read(json, where);
  PretrainedConfig out;
  out.text_ = text;
  out.source_ = source;
  BERTH_CHECK(
      json.contains("model_type"), source,
      ": config.json has no \"model_type\", so berth cannot tell which model family it describes. "
      "Fix: add \"model_type\" (e.g. \"bert\", \"llama\") as the checkpoint's own config.json has it");
  read.string("model_type", out.model_type_);
  read.optional_string("problem_type", out.problem_type);
  // Newer transformers write "dtype", older "torch_dtype"; when both are there HF keeps "dtype".
  read.optional_string("torch_dtype", out.torch_dtype);
  read.optional_string("dtype", out.torch_dtype);
  out.architectures = config::read_architectures(json, where);
  config::read_labels(json, where, out.id2label, out.label2id, warnings);
  config::check_problem_type(where, out.problem_type, out.num_labels());
  for (const auto& [key, value] : json.items())
    if (!shared_fields().count(key)) out.fields_[key] = value.dump();
  return out;
}

PretrainedConfig PretrainedConfig::load(const std::string& path, std::vector<std::string>* warnings) {
  const std::string text =
      read_input_file(path, "the model config",
                      "check the path; a model directory holds config.json next to model.safetensors");
  return from_json_text(text, path, warnings);
}

std::string PretrainedConfig::where(const std::string& field) const {
  if (source_.empty()) return model_type_ + " config: " + field;
  return config::where_in(text_, source_)(field);
}

bool PretrainedConfig::has(const std::string& field) const {
  auto it = fields_.find(field);
  return it != fields_.end() && it->second != "null";
}

namespace {

// The field read by `read` (a Reader member), `fallback` when absent; a required field (no fallback) throws.
template <typename T, typename Read>
T read_field(const PretrainedConfig& config, const std::map<std::string, std::string>& fields,
             const std::string& field, const std::optional<T>& fallback, Read read) {
  auto it = fields.find(field);
  if (it == fields.end()) {
    BERTH_CHECK(fallback.has_value(), config.where(field), " is missing: ", config.model_type(),
                "'s config.json must give it. Fix: add \"", field,
                "\" from the config of the checkpoint the weights came from");
    return *fallback;
  }
  const Json json = {{field, Json::parse(it->second)}};
  const config::Where where = [&](const std::string& name) { return config.where(name); };
  config::Reader reader(json, where, config.model_type() + "'s");
  T value = fallback.value_or(T{});
  read(reader, field, value);
  return value;
}

// As read_field, with null read as nullopt.
template <typename T, typename Read>
std::optional<T> read_optional(const PretrainedConfig& config,
                               const std::map<std::string, std::string>& fields, const std::string& field,
                               const std::optional<T>& fallback, Read read) {
  auto it = fields.find(field);
  if (it == fields.end()) return fallback;
  if (it->second == "null") return std::nullopt;
  return read_field<T>(config, fields, field, std::optional<T>(fallback.value_or(T{})), read);
}

const auto kInteger = [](config::Reader& r, const std::string& f, int64_t& v) { r.integer(f, v); };
const auto kNumber = [](config::Reader& r, const std::string& f, double& v) { r.number(f, v); };
const auto kBoolean = [](config::Reader& r, const std::string& f, bool& v) { r.boolean(f, v); };
const auto kString = [](config::Reader& r, const std::string& f, std::string& v) { r.string(f, v); };

}  // namespace

int64_t PretrainedConfig::get_int(const std::string& field, std::optional<int64_t> fallback) const {
  return read_field<int64_t>(*this, fields_, field, fallback, kInteger);
}

double PretrainedConfig::get_number(const std::string& field, std::optional<double> fallback) const {
  return read_field<double>(*this, fields_, field, fallback, kNumber);
}

bool PretrainedConfig::get_bool(const std::string& field, std::optional<bool> fallback) const {
  return read_field<bool>(*this, fields_, field, fallback, kBoolean);
}

std::string PretrainedConfig::get_string(const std::string& field,
                                         std::optional<std::string> fallback) const {
  return read_field<std::string>(*this, fields_, field, fallback, kString);
}

std::optional<int64_t> PretrainedConfig::get_optional_int(const std::string& field,
                                                          std::optional<int64_t> fallback) const {
  return read_optional<int64_t>(*this, fields_, field, fallback, kInteger);
}

std::optional<double> PretrainedConfig::get_optional_number(const std::string& field,
                                                            std::optional<double> fallback) const {
  return read_optional<double>(*this, fields_, field, fallback, kNumber);
}

std::optional<std::string> PretrainedConfig::get_optional_string(const std::string& field,
                                                                 std::optional<std::string> fallback) const {
  return read_optional<std::string>(*this, fields_, field, fallback, kString);
}

std::string PretrainedConfig::get_json(const std::string& field) const {
  auto it = fields_.find(field);
  return it == fields_.end() ? "" : it->second;
}

void PretrainedConfig::set_int(const std::string& field, int64_t value) {
  set_json(field, Json(value).dump());
}
void PretrainedConfig::set_number(const std::string& field, double value) {
  set_json(field, Json(value).dump());
}
void PretrainedConfig::set_bool(const std::string& field, bool value) { set_json(field, Json(value).dump()); }
void PretrainedConfig::set_string(const std::string& field, const std::string& value) {
  set_json(field, Json(value).dump());
}
void PretrainedConfig::set_null(const std::string& field) { set_json(field, "null"); }

void PretrainedConfig::set_json(const std::string& field, const std::string& json_text) {
  Json value;
  try {
    value = Json::parse(json_text);
  } catch (const Json::exception& e) {
    BERTH_FAIL("PretrainedConfig::set_json(\"", field, "\"): not valid JSON: ", json_text, " (", e.what(),
               ")");
  }
  fields_[field] = value.dump();
  text_.clear();  // the text read no longer describes the config: messages name the source without lines
}

void PretrainedConfig::unsupported(const std::string& field, const std::string& found,
                                   const std::string& supported, const std::string& fix) const {
  BERTH_FAIL(where(field), " is ", found, "; berth implements ", supported, ". Fix: ", fix);
}

void PretrainedConfig::set_num_labels(int64_t count) { config::set_num_labels(count, id2label, label2id); }

void PretrainedConfig::set_labels(const std::vector<std::string>& labels) {
  config::set_labels(labels, id2label, label2id);
}

std::string PretrainedConfig::to_json_text() const {
  Json json = Json::object();
  for (const auto& [key, value] : fields_) json[key] = Json::parse(value);
  json["model_type"] = model_type_;
  config::write_labels(json, id2label, label2id);
  if (problem_type) json["problem_type"] = *problem_type;
  if (architectures) json["architectures"] = *architectures;
  // transformers 5 writes "dtype" (it still reads the old name, "torch_dtype").
  if (torch_dtype) json["dtype"] = *torch_dtype;
  // Python's json.dumps(indent=2, sort_keys=True) with its default ensure_ascii, plus the newline HF adds.
  return json.dump(2, ' ', /*ensure_ascii=*/true) + "\n";
}

void PretrainedConfig::save(const std::string& path) const { write_file_atomically(path, to_json_text()); }

}  // namespace berth
