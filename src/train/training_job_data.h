// The training job's data: each task's loading and encoding, and --block-size packing (training_job.cpp's
// data half).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "berth/data/dataset_source.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/question_answering_job.h"
#include "berth/train/training_job.h"

namespace berth::train {

// The text as loaded (labels, description) and each split tokenized.
struct EncodedData {
  data::LoadedDatasets text;
  std::shared_ptr<data::TokenizedDataset> train, eval, test;
};

// What a job reads for `task`: the labeled text of a sequence classifier (the training data's labels, or a
// checkpoint's named classes when the labels are their integer ids), a language model's text, or a token
// classifier's and a question answerer's splits already encoded (answer_splits: the evaluated QA splits,
// for the metrics' postprocessing).
struct JobData {
  EncodedData data;
  std::vector<std::shared_ptr<const QuestionAnsweringSplit>> answer_splits;
};
JobData load_job_data(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                      const std::optional<PretrainedConfig>& checkpoint, ModelTask task);

// Each split of `text` tokenized, the time it took printed to `out`.
EncodedData encode_data(data::LoadedDatasets text, const tokenizer::Tokenizer& tokenizer,
                        const data::EncodeTextOptions& encoding, std::ostream& out);

// run_clm.py's group_texts over every split: full blocks of block_size tokens, no padding.
void pack_data(EncodedData& data, ModelTask task, size_t block_size, std::ostream& out);

}  // namespace berth::train
