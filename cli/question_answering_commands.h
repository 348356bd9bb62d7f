// `berth eval` and `berth predict` for question-answering models: SQuAD-style files in, SQuAD's metrics or
// the best answer span per question out.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "berth/model/task_model.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/question_answering_job.h"

namespace berth::cli {

struct QuestionAnsweringRun {
  std::string model_dir;
  std::string input;   // a .jsonl or SQuAD .json file
  std::string output;  // eval: metrics JSON; predict: answers JSONL (empty: stdout)
  size_t batch_size = 32;
  size_t max_length = 0;  // 0: the length the model was trained at (training_args.json), else its limit
  std::string device = "auto";
  bool bf16 = false;  // eval: the forward under bf16 autocast
  train::QuestionAnsweringOptions options;
};

// Loss, exact match and F1 over the input's questions, printed (and written to run.output as JSON).
int run_question_answering_eval(const QuestionAnsweringRun& run, std::shared_ptr<TaskModel> model,
                                const tokenizer::Tokenizer& tokenizer);

// One JSON line per question: {"id", "answer", "start", "end", "score"} (v2: "score_diff", and "" as the
// answer when the null answer wins), start/end in characters (code points) of the context, score the
// answer's probability among the n best.
int run_question_answering_predict(const QuestionAnsweringRun& run);

}  // namespace berth::cli
