// BertConfig: HF's config.json for BERT, read, validated and written as transformers does.
#pragma once

#include "berth/model/problem_type.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// Field names, meanings and defaults are transformers' BertConfig (and PretrainedConfig for the labels).
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";  // gelu | gelu_new | gelu_pytorch_tanh | relu
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  std::optional<double> classifier_dropout;  // null: hidden_dropout_prob
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  std::optional<int64_t> pad_token_id = 0;  // null: no padding row in the word embeddings
  std::string position_embedding_type = "absolute";
  bool use_cache = true;

  // Labels as PretrainedConfig keeps them: num_labels is id2label's size; the default is LABEL_0, LABEL_1.
  std::map<int64_t, std::string> id2label{{0, "LABEL_0"}, {1, "LABEL_1"}};
  std::map<std::string, int64_t> label2id{{"LABEL_0", 0}, {"LABEL_1", 1}};
  std::optional<std::string>
      problem_type;  // kRegression, kSingleLabelClassification, kMultiLabelClassification
  std::optional<std::vector<std::string>> architectures;
  std::optional<std::string> torch_dtype;  // "float32", ...: read from "torch_dtype" or (newer HF) "dtype"

  // Fields berth does not interpret, kept so a load/save round trip loses nothing: name -> JSON text.
  std::map<std::string, std::string> extra_fields;

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  // HF's num_labels setter: a different count replaces the labels with LABEL_0..LABEL_{n-1}.
  void set_num_labels(int64_t num_labels);
  // Sets id2label and the matching label2id.
  void set_labels(const std::vector<std::string>& labels);
  // The dropout before the classifier: classifier_dropout, or hidden_dropout_prob when that is null.
  double classifier_dropout_or_default() const { return classifier_dropout.value_or(hidden_dropout_prob); }
  int64_t head_size() const { return hidden_size / num_attention_heads; }

  // Parses config.json text. `source` names the text in messages ("dir/config.json"); messages carry
  // source:line. HF's lenient cases (num_labels disagreeing with id2label) add a line to *warnings.
  // Throws berth::Error for invalid JSON, wrong types, missing required fields and failed validate().
  static BertConfig from_json_text(const std::string& text, const std::string& source = "config.json",
                                   std::vector<std::string>* warnings = nullptr);
  static BertConfig load(const std::string& path, std::vector<std::string>* warnings = nullptr);

  // config.json as transformers' save_pretrained writes it: sorted keys, 2-space indent, ASCII escapes,
  // the label fields only when they differ from the defaults, unknown fields as read. No
  // transformers_version: berth is not transformers.
  std::string to_json_text() const;
  // Writes to_json_text() to a temporary file next to `path`, then renames it over `path`.
  void save(const std::string& path) const;

  // Each rule failure throws berth::Error naming the field, its value and the rule.
  void validate() const;
};

}  // namespace berth
