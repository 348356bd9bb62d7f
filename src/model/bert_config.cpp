// Reads, validates and writes BERT's config.json with transformers' field names, defaults and rules.
#include "berth/model/bert_config.h"

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "core/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace berth {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kActivations = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
const std::vector<std::string> kProblemTypes = {kRegression, kSingleLabelClassification,
                                                kMultiLabelClassification};

// Names a field in messages: "dir/config.json:7: hidden_size" when read from a file, "hidden_size" else.
using Where = std::function<std::string(const std::string& field)>;

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

std::string json_type(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number_integer() || value.is_number_unsigned()) return "an integer";
  if (value.is_number_float()) return "a number with a fraction";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "a list";
  return "an object";
}

// Reads the fields of one config.json object, reporting each problem at its field's line.
class Reader {
 public:
  Reader(const Json& json, const Where& where) : json_(json), where_(where) {}

  bool has(const std::string& key) const { return json_.contains(key); }

  void integer(const std::string& key, int64_t& out, bool required = false) {
    if (!present(key, required, "an integer")) return;
    const Json& value = json_.at(key);
    BERTH_CHECK(value.is_number_integer() || value.is_number_unsigned(), where_(key),
                " must be an integer, found ", json_type(value), " (", value.dump(),
                "). Fix: write it as a whole number, e.g. \"", key, "\": ", out);
    out = value.get<int64_t>();
  }

  void optional_integer(const std::string& key, std::optional<int64_t>& out) {
    if (!has(key)) return;
    if (json_.at(key).is_null()) {
      out.reset();
      return;
    }
    int64_t value = out.value_or(0);
    integer(key, value);
    out = value;
  }

  void number(const std::string& key, double& out) {
    if (!present(key, false, "a number")) return;
    const Json& value = json_.at(key);
    BERTH_CHECK(value.is_number(), where_(key), " must be a number, found ", json_type(value), " (",
                value.dump(), "). Fix: write it as a number, e.g. \"", key, "\": ", Json(out).dump());
    out = value.get<double>();
  }

  void optional_number(const std::string& key, std::optional<double>& out) {
    if (!has(key)) return;
    if (json_.at(key).is_null()) {
      out.reset();
      return;
    }
    double value = 0;
    number(key, value);
    out = value;
  }

  void string(const std::string& key, std::string& out) {
    if (!present(key, false, "a string")) return;
    const Json& value = json_.at(key);
    BERTH_CHECK(value.is_string(), where_(key), " must be a string, found ", json_type(value), " (",
                value.dump(), "). Fix: write it in quotes, e.g. \"", key, "\": \"", out, "\"");
    out = value.get<std::string>();
  }

  void optional_string(const std::string& key, std::optional<std::string>& out) {
    if (!has(key)) return;
    if (json_.at(key).is_null()) {
      out.reset();
      return;
    }
    std::string value;
    string(key, value);
    out = value;
  }

  void boolean(const std::string& key, bool& out) {
    if (!present(key, false, "true or false")) return;
    const Json& value = json_.at(key);
    BERTH_CHECK(value.is_boolean(), where_(key), " must be true or false, found ", json_type(value), " (",
                value.dump(), ")");
    out = value.get<bool>();
  }

 private:
  bool present(const std::string& key, bool required, const char* kind) {
    if (!has(key)) {
      BERTH_CHECK(!required, where_(key), " is missing: BERT's config.json must give ", key, " (", kind,
                  "). Fix: add \"", key,
                  "\" to config.json, e.g. from the config of the checkpoint the weights came "
                  "from");
      return false;
    }
    return true;
  }

  const Json& json_;
  const Where& where_;
};

void read_labels(const Json& json, const Where& where, BertConfig& config,
                 std::vector<std::string>* warnings) {
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
    config.id2label = labels;
    if (num_labels && *num_labels != config.num_labels() && warnings) {
      warnings->push_back("You passed `num_labels=" + std::to_string(*num_labels) +
                          "` which is incompatible to the `id2label` map of length `" +
                          std::to_string(config.num_labels()) + "`.");
    }
  } else {
    config.set_num_labels(num_labels.value_or(2));
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
    config.label2id = ids;
  } else if (has_id2label) {
    config.label2id.clear();
    for (const auto& [id, name] : config.id2label) config.label2id[name] = id;
  }
}

// Not among them: position_embedding_type, read (it must be "absolute") but otherwise kept as read, since
// transformers 5's BertConfig has no such field and writes it back only when the file it loaded had it.
const std::set<std::string>& known_fields() {
  static const std::set<std::string> fields = {
      "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
      "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout",
      "max_position_embeddings", "type_vocab_size", "initializer_range", "layer_norm_eps", "pad_token_id",
      "use_cache", "id2label", "label2id", "num_labels", "problem_type", "architectures", "torch_dtype",
      "dtype", "model_type",
      // Written by whichever transformers saved the file; berth writes none (it is not transformers).
      "transformers_version"};
  return fields;
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

void validate_config(const BertConfig& c, const Where& where) {
  check_positive(where, "vocab_size", c.vocab_size, "the number of rows of the word embeddings");
  check_positive(where, "hidden_size", c.hidden_size, "the width of every hidden state");
  check_positive(where, "num_hidden_layers", c.num_hidden_layers, "the number of encoder layers");
  check_positive(where, "num_attention_heads", c.num_attention_heads,
                 "the number of attention heads per layer");
  check_positive(where, "intermediate_size", c.intermediate_size, "the width of the feed-forward block");
  check_positive(where, "max_position_embeddings", c.max_position_embeddings,
                 "the longest sequence the model accepts");
  check_positive(where, "type_vocab_size", c.type_vocab_size, "the number of token types (segments)");
  BERTH_CHECK(
      c.hidden_size % c.num_attention_heads == 0, where("hidden_size"), " (", c.hidden_size,
      ") must be divisible by num_attention_heads (", c.num_attention_heads,
      "): each head gets hidden_size / num_attention_heads features. Fix: make hidden_size a multiple of "
      "num_attention_heads (e.g. 768 with 12 heads)");
  BERTH_CHECK(std::find(kActivations.begin(), kActivations.end(), c.hidden_act) != kActivations.end(),
              where("hidden_act"), " \"", c.hidden_act, "\" is not a supported activation: berth implements ",
              text::join(kActivations, ", "), ". Fix: use one of those (BERT checkpoints use \"gelu\")");
  check_dropout(where, "hidden_dropout_prob", c.hidden_dropout_prob);
  check_dropout(where, "attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  if (c.classifier_dropout) check_dropout(where, "classifier_dropout", *c.classifier_dropout);
  BERTH_CHECK(
      std::isfinite(c.initializer_range) && c.initializer_range >= 0, where("initializer_range"), " (",
      c.initializer_range,
      ") must be a non-negative number: it is the standard deviation of the random initialisation. Fix: "
      "use BERT's 0.02");
  BERTH_CHECK(std::isfinite(c.layer_norm_eps) && c.layer_norm_eps > 0, where("layer_norm_eps"), " (",
              c.layer_norm_eps,
              ") must be positive: LayerNorm divides by sqrt(variance + eps). Fix: use BERT's 1e-12");
  if (c.pad_token_id) {
    BERTH_CHECK(*c.pad_token_id >= 0 && *c.pad_token_id < c.vocab_size, where("pad_token_id"), " (",
                *c.pad_token_id, ") must be a token id in [0, vocab_size = ", c.vocab_size,
                "). Fix: set it to the id of [PAD] in vocab.txt (its 0-based line number), or null");
  }
  BERTH_CHECK(
      c.position_embedding_type == "absolute", where("position_embedding_type"), " \"",
      c.position_embedding_type,
      "\" is not supported: berth implements BERT's \"absolute\" position embeddings only (relative_key and "
      "relative_key_query need extra weights). Fix: use a checkpoint trained with \"absolute\"");
  BERTH_CHECK(c.num_labels() >= 1, where("id2label"), " is empty: a classifier needs at least one label");
  if (c.problem_type) {
    BERTH_CHECK(std::find(kProblemTypes.begin(), kProblemTypes.end(), *c.problem_type) != kProblemTypes.end(),
                where("problem_type"), " \"", *c.problem_type, "\" is not one of ",
                text::join(kProblemTypes, ", "),
                ". Fix: use one of those, or null to choose from the labels as HF does");
    BERTH_CHECK(!(*c.problem_type == kSingleLabelClassification && c.num_labels() == 1),
                where("problem_type"),
                " \"single_label_classification\" requires num_labels > 1, found 1 label. Fix: for binary "
                "classification use 2 labels, or use problem_type \"regression\" for a single-output head");
  }
}

}  // namespace

void BertConfig::set_num_labels(int64_t count) {
  BERTH_CHECK(count >= 1, "num_labels (", count,
              ") must be at least 1: the classifier needs one output per label");
  if (count == num_labels()) return;
  id2label.clear();
  label2id.clear();
  for (int64_t i = 0; i < count; ++i) {
    id2label[i] = "LABEL_" + std::to_string(i);
    label2id[id2label[i]] = i;
  }
}

void BertConfig::set_labels(const std::vector<std::string>& labels) {
  BERTH_CHECK(!labels.empty(), "set_labels: a classifier needs at least one label, found none");
  id2label.clear();
  label2id.clear();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    id2label[static_cast<int64_t>(i)] = labels[i];
    label2id[labels[i]] = static_cast<int64_t>(i);
  }
}

BertConfig BertConfig::from_json_text(const std::string& text, const std::string& source,
                                      std::vector<std::string>* warnings) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    BERTH_FAIL(source, ":", line_at(text, e.byte > 0 ? e.byte - 1 : 0), ": not valid JSON (", e.what(),
               "). Fix: repair the file, or copy config.json again from the checkpoint");
  }
  BERTH_CHECK(json.is_object(), source, ":1: config.json must hold one JSON object ({...}), found ",
              json_type(json));

  const Where where = [&](const std::string& field) {
    std::optional<int> line = line_of_key(text, field);
    return source + (line ? ":" + std::to_string(*line) : "") + ": " + field;
  };

  BertConfig config;
  Reader read(json, where);
  std::string model_type = "bert";
  read.string("model_type", model_type);
  BERTH_CHECK(
      model_type == "bert", where("model_type"), " is \"", model_type,
      "\", but berth implements model_type \"bert\" only (other families differ in ways that would load "
      "without error and compute the wrong thing). Fix: use a BERT checkpoint");
  read.integer("vocab_size", config.vocab_size, /*required=*/true);
  read.integer("hidden_size", config.hidden_size, true);
  read.integer("num_hidden_layers", config.num_hidden_layers, true);
  read.integer("num_attention_heads", config.num_attention_heads, true);
  read.integer("intermediate_size", config.intermediate_size, true);
  read.string("hidden_act", config.hidden_act);
  read.number("hidden_dropout_prob", config.hidden_dropout_prob);
  read.number("attention_probs_dropout_prob", config.attention_probs_dropout_prob);
  read.optional_number("classifier_dropout", config.classifier_dropout);
  read.integer("max_position_embeddings", config.max_position_embeddings);
  read.integer("type_vocab_size", config.type_vocab_size);
  read.number("initializer_range", config.initializer_range);
  read.number("layer_norm_eps", config.layer_norm_eps);
  read.optional_integer("pad_token_id", config.pad_token_id);
  read.string("position_embedding_type", config.position_embedding_type);
  read.boolean("use_cache", config.use_cache);
  read.optional_string("problem_type", config.problem_type);
  // Newer transformers write "dtype", older "torch_dtype"; when both are there HF keeps "dtype".
  read.optional_string("torch_dtype", config.torch_dtype);
  read.optional_string("dtype", config.torch_dtype);
  if (json.contains("architectures") && !json.at("architectures").is_null()) {
    const Json& list = json.at("architectures");
    bool strings = list.is_array();
    for (const Json& item : list) strings = strings && item.is_string();
    BERTH_CHECK(strings, where("architectures"), " must be a list of class names, found ", list.dump(),
                ". Fix: write e.g. \"architectures\": [\"BertForSequenceClassification\"]");
    config.architectures = list.get<std::vector<std::string>>();
  }
  read_labels(json, where, config, warnings);

  for (const auto& [key, value] : json.items()) {
    if (!known_fields().count(key)) config.extra_fields[key] = value.dump();
  }
  validate_config(config, where);
  return config;
}

BertConfig BertConfig::load(const std::string& path, std::vector<std::string>* warnings) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in.good(), path,
              ": cannot open the model config. Fix: check the path; a model directory holds "
              "config.json next to model.safetensors");
  std::ostringstream text;
  text << in.rdbuf();
  return from_json_text(text.str(), path, warnings);
}

std::string BertConfig::to_json_text() const {
  Json json = Json::object();
  for (const auto& [key, value] : extra_fields) json[key] = Json::parse(value);
  json["model_type"] = "bert";
  json["vocab_size"] = vocab_size;
  json["hidden_size"] = hidden_size;
  json["num_hidden_layers"] = num_hidden_layers;
  json["num_attention_heads"] = num_attention_heads;
  json["intermediate_size"] = intermediate_size;
  json["hidden_act"] = hidden_act;
  json["hidden_dropout_prob"] = hidden_dropout_prob;
  json["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  json["classifier_dropout"] = classifier_dropout ? Json(*classifier_dropout) : Json(nullptr);
  json["max_position_embeddings"] = max_position_embeddings;
  json["type_vocab_size"] = type_vocab_size;
  json["initializer_range"] = initializer_range;
  json["layer_norm_eps"] = layer_norm_eps;
  json["pad_token_id"] = pad_token_id ? Json(*pad_token_id) : Json(nullptr);
  json["use_cache"] = use_cache;
  // PretrainedConfig's own fields are written only when they differ from its defaults (to_diff_dict).
  const BertConfig defaults;
  if (id2label != defaults.id2label) {
    Json labels = Json::object();
    for (const auto& [id, name] : id2label) labels[std::to_string(id)] = name;
    json["id2label"] = labels;
  }
  if (label2id != defaults.label2id) json["label2id"] = label2id;
  if (problem_type) json["problem_type"] = *problem_type;
  if (architectures) json["architectures"] = *architectures;
  // transformers 5 writes "dtype" (it still reads the old name, "torch_dtype").
  if (torch_dtype) json["dtype"] = *torch_dtype;
  // Python's json.dumps(indent=2, sort_keys=True) with its default ensure_ascii, plus the newline HF adds.
  return json.dump(2, ' ', /*ensure_ascii=*/true) + "\n";
}

void BertConfig::save(const std::string& path) const { write_file_atomically(path, to_json_text()); }

void BertConfig::validate() const {
  validate_config(*this, [](const std::string& field) { return "BertConfig: " + field; });
}

}  // namespace berth
