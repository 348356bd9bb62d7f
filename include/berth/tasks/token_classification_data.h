// The data of a token-classification run: JSONL files of words and tags, the label list (the checkpoint's or
// the training file's, as run_ner.py chooses it), each split encoded with its tags aligned to sub-tokens.
#pragma once

#include "berth/data/dataset_source.h"
#include "berth/data/label_map.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/model/pretrained_config.h"
#include "berth/tokenizer/tokenizer.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace berth::tasks {

struct TokenClassificationData {
  data::LabelMap labels;
  std::shared_ptr<data::TokenizedDataset> train, eval, test;
  std::string description;  // "train.jsonl (200 rows), eval.jsonl (40 rows); 5 labels: B-CAP, ..."
};

// The words column and tags column of a token-classification source: --text-column and --label-column,
// whose defaults ("text", "label") stand for run_ner.py's "tokens" and "ner_tags".
std::string tokens_column(const data::DatasetSource& source);
std::string tags_column(const data::DatasetSource& source);

// The labels a checkpoint's token-classification head was trained for (its architectures say
// ...ForTokenClassification and its id2label is not HF's LABEL_<i> default), else nullopt: run_ner.py keeps a
// model's label2id only then.
std::optional<data::LabelMap> checkpoint_token_labels(const PretrainedConfig& config);

// Reads source.train/eval/test (JSONL; --data's bundled sets have no tags: berth::Error with the fix), labels
// from `fixed` or the training file's sorted unique tags, each split encoded truncated at max_length.
// `labeled` false reads no tags (prediction input).
TokenClassificationData load_token_classification_data(const data::DatasetSource& source,
                                                       const tokenizer::Tokenizer& tokenizer,
                                                       size_t max_length,
                                                       const std::optional<data::LabelMap>& fixed);

}  // namespace berth::tasks
