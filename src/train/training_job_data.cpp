// The training job's data: a classifier's labels against a checkpoint's classes, tagged words, SQuAD-style
// windows, tokenizing each split and packing blocks.
#include "train/training_job_data.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <string>

#include "berth/core/error.h"
#include "berth/data/pack_blocks.h"
#include "berth/train/encode_options.h"
#include "berth/train/token_classification_data.h"

namespace berth::train {
namespace {

// A fine-tuned classifier's named classes: its id2label when the names are not HF's defaults (LABEL_0,
// LABEL_1 ...), else nullopt.
std::optional<data::LabelMap> named_checkpoint_classes(const PretrainedConfig& checkpoint) {
  std::vector<std::string> names;
  bool named = false;
  for (const auto& [id, name] : checkpoint.id2label) {
    names.push_back(name);
    named = named || name != "LABEL_" + std::to_string(id);
  }
  return named ? std::optional<data::LabelMap>(data::LabelMap(names)) : std::nullopt;
}

// Whether `observed` holds labels (regression has none) and every one is an integer class id below `classes`.
bool all_class_ids(const data::LabelMap& observed, size_t classes) {
  return !observed.empty() &&
         std::all_of(observed.labels().begin(), observed.labels().end(), [&](const std::string& label) {
           const bool digits =
               !label.empty() && label.size() < 10 &&
               std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; });
           return digits && std::stoull(label) < classes;
         });
}

// A sequence classifier's data: the training file's labels, or, when they are all integer class ids of a
// checkpoint's named classes, those classes (HF datasets' ClassLabel integers index them; the head and the
// names stay).
data::LoadedDatasets load_classification_data(const data::DatasetSource& source,
                                              const std::optional<PretrainedConfig>& checkpoint,
                                              ModelTask task) {
  std::optional<data::LabelMap> fixed;
  std::optional<data::LabelMap> named;
  if (task == ModelTask::SequenceClassification && checkpoint && source.data.empty() && !source.train.empty())
    named = named_checkpoint_classes(*checkpoint);
  if (named) {
    data::DatasetSource train_only = source;  // the training labels decide; eval and test follow them
    train_only.eval.clear();
    train_only.test.clear();
    if (all_class_ids(data::load_datasets(train_only, std::nullopt).label_map, named->size())) fixed = named;
  }
  data::LoadedDatasets loaded = data::load_datasets(source, fixed);
  BERTH_CHECK(loaded.train, "train: no training data. Fix: --data spamassassin or --train FILE");
  return loaded;
}

// Token classification: words and tags, encoded as they load, with the checkpoint's labels when its head was
// trained for named ones (run_ner.py keeps them).
EncodedData load_tagged_data(const data::DatasetSource& source, const tokenizer::Tokenizer& tokenizer,
                             size_t max_length, const std::optional<PretrainedConfig>& checkpoint) {
  TokenClassificationData tagged = load_token_classification_data(
      source, tokenizer, max_length, checkpoint ? checkpoint_token_labels(*checkpoint) : std::nullopt);
  BERTH_CHECK(tagged.train, "train: no training data. Fix: --train FILE.jsonl (\"tokens\" and \"ner_tags\")");
  EncodedData data;
  data.text.label_map = tagged.labels;
  data.text.description = tagged.description;
  data.train = tagged.train;
  data.eval = tagged.eval;
  data.test = tagged.test;
  return data;
}

// Question answering: each split's examples in windows with their answers' token positions (run_qa.py); the
// eval and test splits are kept for the metrics, which postprocess answers from their windows' logits.
EncodedData load_question_answering_data(const TrainingJobOptions& options,
                                         const tokenizer::Tokenizer& tokenizer,
                                         std::vector<std::shared_ptr<const QuestionAnsweringSplit>>& splits) {
  const data::DatasetSource& source = options.data;
  BERTH_CHECK(source.data.empty(), "train: --data ", source.data,
              " is a text classification set; question answering reads SQuAD-style files. Fix: --train FILE "
              "(and --eval FILE) in .jsonl ({id, question, context, answers}) or SQuAD's .json layout");
  BERTH_CHECK(!source.train.empty(),
              "train: no training data. Fix: --train FILE (.jsonl with {id, question, "
              "context, answers: {text: [...], answer_start: [...]}} a line, or SQuAD's .json)");
  EncodedData data;
  std::string description;
  auto load = [&](const std::string& path, const char* name,
                  bool evaluated) -> std::shared_ptr<data::TokenizedDataset> {
    if (path.empty()) return nullptr;
    auto split = load_question_answering_split(path, tokenizer, static_cast<size_t>(*options.args.max_length),
                                               options.question_answering, /*labeled=*/true);
    if (evaluated) splits.push_back(split);
    description += (description.empty() ? "" : ", ") + std::to_string(split->examples.size()) + " " + name +
                   " questions (" + std::to_string(split->features.example_index.size()) + " windows)";
    return split->features.dataset;
  };
  data.train = load(source.train, "train", false);
  data.eval = load(source.eval, "eval", true);
  data.test = load(source.test, "test", true);
  data.text.description = "question answering: " + description;
  return data;
}

}  // namespace

JobData load_job_data(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                      const std::optional<PretrainedConfig>& checkpoint, ModelTask task) {
  JobData job;
  if (task == ModelTask::QuestionAnswering) {
    job.data = load_question_answering_data(options, tokenizer, job.answer_splits);
    return job;
  }
  // Labels: the training data's (a fine-tuned model's own labels are replaced, as HF's num_labels= does,
  // unless the data's labels are integer class ids of its named classes); a language model reads the text
  // alone.
  data::DatasetSource source = options.data;
  source.labeled = task == ModelTask::SequenceClassification || task == ModelTask::TokenClassification;
  if (task == ModelTask::TokenClassification)
    job.data = load_tagged_data(source, tokenizer, encode_options(options.args).max_length, checkpoint);
  else
    job.data.text = load_classification_data(source, checkpoint, task);
  return job;
}

EncodedData encode_data(data::LoadedDatasets text, const tokenizer::Tokenizer& tokenizer,
                        const data::EncodeTextOptions& encoding, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  auto encode =
      [&](const std::optional<data::TextDataset>& dataset) -> std::shared_ptr<data::TokenizedDataset> {
    if (!dataset) return nullptr;
    return std::make_shared<data::TokenizedDataset>(data::encode_text_dataset(*dataset, tokenizer, encoding));
  };
  EncodedData data;
  data.train = encode(text.train);
  data.eval = encode(text.eval);
  data.test = encode(text.test);
  data.text = std::move(text);
  out << "tokenized in " << std::fixed << std::setprecision(1)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s (max_length "
      << encoding.max_length;
  if (encoding.keep_head)
    out << ", head+tail: the first " << *encoding.keep_head << " tokens and the last "
        << encoding.max_length - 2 - *encoding.keep_head;
  out << ")\n" << std::defaultfloat << std::setprecision(6);
  return data;
}

void pack_data(EncodedData& data, ModelTask task, size_t block_size, std::ostream& out) {
  BERTH_CHECK(task == ModelTask::CausalLM || task == ModelTask::MaskedLM,
              "train: --block-size packs texts for causal-lm or masked-lm training; the task is ",
              task_name(task), ". Fix: drop --block-size, or pass --task causal-lm or --task masked-lm");
  for (std::shared_ptr<data::TokenizedDataset>* split : {&data.train, &data.eval, &data.test})
    if (*split) *split = std::make_shared<data::TokenizedDataset>(data::pack_blocks(**split, block_size));
  out << "packed into blocks of " << block_size << " tokens: " << data.train->size() << " training blocks\n";
}

}  // namespace berth::train
