// Token-classification data for berth train and eval: word/tag files through WordTagDataset, the label list
// as run_ner.py chooses it.
#include "berth/tasks/token_classification_data.h"

#include "berth/core/error.h"
#include "berth/data/word_tag_dataset.h"

namespace berth::tasks {

std::string tokens_column(const data::DatasetSource& source) {
  return source.text_column == "text" ? "tokens" : source.text_column;
}

std::string tags_column(const data::DatasetSource& source) {
  return source.label_column == "label" ? "ner_tags" : source.label_column;
}

std::optional<data::LabelMap> checkpoint_token_labels(const PretrainedConfig& config) {
  bool token_head = false;
  if (config.architectures)
    for (const std::string& architecture : *config.architectures)
      token_head = token_head || architecture.find("ForTokenClassification") != std::string::npos;
  if (!token_head) return std::nullopt;
  bool default_names = true;
  for (const auto& [id, label] : config.id2label)
    default_names = default_names && label == "LABEL_" + std::to_string(id);
  if (default_names) return std::nullopt;
  std::vector<std::string> labels;
  for (const auto& [id, label] : config.id2label) labels.push_back(label);
  return data::LabelMap(labels);
}

TokenClassificationData load_token_classification_data(const data::DatasetSource& source,
                                                       const tokenizer::Tokenizer& tokenizer,
                                                       size_t max_length,
                                                       const std::optional<data::LabelMap>& fixed) {
  BERTH_CHECK(source.data.empty(), "token-classification: --data ", source.data,
              " has no word tags. Fix: --train/--eval/--test JSONL files with a \"tokens\" list and a "
              "\"ner_tags\" list per row (run_ner.py's columns; --text-column/--label-column rename them)");
  data::WordTagOptions options;
  options.tokens_column = tokens_column(source);
  options.tags_column = tags_column(source);
  options.labeled = source.labeled;
  options.label_map = fixed;
  TokenClassificationData out;
  std::optional<data::WordTagDataset> first;
  const auto read = [&](const std::string& path,
                        const char* name) -> std::shared_ptr<data::TokenizedDataset> {
    if (path.empty()) return nullptr;
    data::WordTagDataset dataset = data::WordTagDataset::load(path, options);
    if (!options.label_map && options.labeled)
      options.label_map = dataset.label_map();  // the training file's
    out.labels = options.label_map.value_or(data::LabelMap());
    out.description += (out.description.empty() ? "" : ", ") + std::string(name) + " " + path + " (" +
                       std::to_string(dataset.size()) + " rows)";
    return std::make_shared<data::TokenizedDataset>(data::encode_word_tags(dataset, tokenizer, max_length));
  };
  out.train = read(source.train, "train");
  out.eval = read(source.eval, "eval");
  out.test = read(source.test, "test");
  if (!out.labels.empty())
    out.description += "; " + std::to_string(out.labels.size()) + " labels: " + out.labels.describe();
  return out;
}

}  // namespace berth::tasks
