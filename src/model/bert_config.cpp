// Reads, validates and writes BERT's config.json with transformers' field names, defaults and rules.
#include "berth/model/bert_config.h"
#include "berth/core/input_file.h"

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "core/text.h"
#include "model/config_reader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace berth {
namespace {

using config::check_dropout;
using config::check_positive;
using config::Json;
using config::json_type;
using config::Reader;
using config::Where;

const std::vector<std::string> kActivations = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};

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
  config::check_problem_type(where, c.problem_type, c.num_labels());
}

}  // namespace

void BertConfig::set_num_labels(int64_t count) { config::set_num_labels(count, id2label, label2id); }

void BertConfig::set_labels(const std::vector<std::string>& labels) {
  config::set_labels(labels, id2label, label2id);
}

BertConfig BertConfig::from_json_text(const std::string& text, const std::string& source,
                                      std::vector<std::string>* warnings) {
  const Json json = config::parse_object(text, source);
  const Where where = config::where_in(text, source);

  BertConfig config;
  Reader read(json, where, "BERT's");
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
  config.architectures = config::read_architectures(json, where);
  config::read_labels(json, where, config.id2label, config.label2id, warnings);

  for (const auto& [key, value] : json.items()) {
    if (!known_fields().count(key)) config.extra_fields[key] = value.dump();
  }
  validate_config(config, where);
  return config;
}

BertConfig BertConfig::load(const std::string& path, std::vector<std::string>* warnings) {
  const std::string text =
      read_input_file(path, "the model config",
                      "check the path; a model directory holds config.json next to model.safetensors");
  return from_json_text(text, path, warnings);
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
  config::write_labels(json, id2label, label2id);
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
