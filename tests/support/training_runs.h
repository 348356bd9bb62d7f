// Shared by the tests that train through `berth train`: a small spam/ham split, weight comparisons, and the
// model families the equivalence tests train.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "support/test_support.h"

namespace berth::testing {

// Ham and spam sentences of different lengths (so that batches pad differently per rank), from words the
// tiny golden model's vocabulary knows.
inline void write_spam_ham_split(const std::string& path, int rows, int offset) {
  const std::vector<std::string> spam = {"free prize click here now", "win cash offer",
                                         "cheap loans click now click now free"};
  const std::vector<std::string> ham = {"meeting tomorrow review report", "the build is green",
                                        "please review the attached report before the meeting tomorrow"};
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    const bool is_spam = (i + offset) % 2 == 0;
    const auto& pool = is_spam ? spam : ham;
    out << nlohmann::json{{"text", pool[(i / 2 + offset) % pool.size()]}, {"label", is_spam ? "spam" : "ham"}}
               .dump()
        << "\n";
  }
}

inline std::map<std::string, at::Tensor> saved_weights(const std::string& dir) {
  return io::load_safetensors(dir + "/model.safetensors");
}

// The largest absolute difference between two saved models' tensors, and where it is; "" when their names
// differ (then the difference is infinite).
inline std::pair<double, std::string> largest_weight_difference(const std::string& a, const std::string& b) {
  const auto left = saved_weights(a);
  const auto right = saved_weights(b);
  if (left.size() != right.size()) return {1e30, "(different tensor counts)"};
  std::pair<double, std::string> worst{0.0, ""};
  for (const auto& [name, tensor] : left) {
    if (!right.count(name)) return {1e30, name + " (missing)"};
    const double diff = (tensor - right.at(name)).abs().max().item<double>();
    if (diff > worst.first) worst = {diff, name};
  }
  return worst;
}

// The families the Trainer equivalence tests train through `berth train`, small and without dropout (ranks
// and one process would draw different masks), all on the tiny BERT tokenizer: the bert-tiny preset and a
// RoBERTa as sequence classifiers, and llama-tiny narrowed to hidden 32 as a causal LM whose lm_head is tied
// to its input embeddings, on packed blocks (every row counts the same tokens, so micro-batch means average
// to the batch's as a classifier's do).
enum class TrainingFamily { Bert, Roberta, Llama, Deberta };

inline std::string family_name(TrainingFamily family) {
  switch (family) {
    case TrainingFamily::Bert:
      return "Bert";
    case TrainingFamily::Roberta:
      return "Roberta";
    case TrainingFamily::Llama:
      return "Llama";
    case TrainingFamily::Deberta:
      return "Deberta";
  }
  return "";
}

// RoBERTa has no preset in berth: a seeded fresh RobertaForSequenceClassification (pad id the tokenizer's,
// so positions start after it as in HF) saved once into `dir`, which `berth train --model` fine-tunes.
inline void write_tiny_roberta(const std::string& dir) {
  if (std::filesystem::exists(dir + "/model.safetensors")) return;
  const tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(tiny_bert_classifier_dir());
  PretrainedConfig config("roberta");
  config.set_int("vocab_size", static_cast<int64_t>(tokenizer.vocab_size()));
  config.set_int("hidden_size", 32);
  config.set_int("num_hidden_layers", 2);
  config.set_int("num_attention_heads", 4);
  config.set_int("intermediate_size", 64);
  config.set_int("max_position_embeddings", 66);
  config.set_int("type_vocab_size", 1);
  config.set_int("pad_token_id", tokenizer.pad_token_id());
  config.set_number("hidden_dropout_prob", 0);
  config.set_number("attention_probs_dropout_prob", 0);
  config.set_labels({"ham", "spam"});
  build_task_model(config, ModelTask::SequenceClassification, {true, 5})->save_pretrained(dir);
}

// `berth train`'s flags choosing the family's model and task; RoBERTa's model is written under `work_dir`.
inline std::string family_model_flags(TrainingFamily family, const std::string& work_dir) {
  const std::string tokenizer = " --tokenizer " + tiny_bert_classifier_dir();
  switch (family) {
    case TrainingFamily::Bert:
      return "--model-preset bert-tiny" + tokenizer +
             " --config-overrides "
             "max_position_embeddings=64,hidden_dropout_prob=0,attention_probs_dropout_prob=0";
    case TrainingFamily::Roberta:
      write_tiny_roberta(work_dir + "/roberta-tiny");
      return "--model " + work_dir + "/roberta-tiny" + tokenizer;
    case TrainingFamily::Llama:
      return "--model-preset llama-tiny" + tokenizer +
             " --config-overrides hidden_size=32,intermediate_size=64 --task causal-lm --block-size 16";
    case TrainingFamily::Deberta:
      return "--model-preset deberta-v3-tiny" + tokenizer +
             " --config-overrides hidden_size=32,pooler_hidden_size=32,intermediate_size=64,"
             "hidden_dropout_prob=0,attention_probs_dropout_prob=0";
  }
  return "";
}

// A tensor training moves (so that equal weights are no accident).
inline std::string family_moved_tensor(TrainingFamily family) {
  switch (family) {
    case TrainingFamily::Bert:
      return "classifier.weight";
    case TrainingFamily::Roberta:
      return "classifier.out_proj.weight";
    case TrainingFamily::Llama:
      return "model.embed_tokens.weight";
    case TrainingFamily::Deberta:
      return "classifier.weight";
  }
  return "";
}

// Rows of training text: the causal LM's 3 steps of 16 blocks of 16 tokens must fit in one epoch (a short
// last batch would weigh its tokens differently on one rank and on two).
inline int family_train_rows(TrainingFamily family) { return family == TrainingFamily::Llama ? 200 : 48; }

}  // namespace berth::testing
