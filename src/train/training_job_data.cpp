// The training job's data: what the task's recipe reads, tokenizing each split and packing blocks.
#include "train/training_job_data.h"

#include <chrono>
#include <iomanip>
#include <string>

#include "berth/core/error.h"
#include "berth/data/pack_blocks.h"
#include "berth/train/encode_options.h"

namespace berth::train {

EncodedData load_job_data(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                          const std::optional<PretrainedConfig>& checkpoint, ModelTask task) {
  const size_t max_length = static_cast<size_t>(*options.args.max_length);
  return tasks::task_recipe(task).load_training_data(
      {options.data, tokenizer, max_length, options.question_answering, checkpoint ? &*checkpoint : nullptr});
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
  BERTH_CHECK(tasks::task_recipe(task).traits().packs_blocks,
              "train: --block-size packs texts for causal-lm or masked-lm training; the task is ",
              task_name(task), ". Fix: drop --block-size, or pass --task causal-lm or --task masked-lm");
  for (std::shared_ptr<data::TokenizedDataset>* split : {&data.train, &data.eval, &data.test})
    if (*split) *split = std::make_shared<data::TokenizedDataset>(data::pack_blocks(**split, block_size));
  out << "packed into blocks of " << block_size << " tokens: " << data.train->size() << " training blocks\n";
}

}  // namespace berth::train
