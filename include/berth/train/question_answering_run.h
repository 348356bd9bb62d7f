// Evaluating and predicting with a question-answering model over SQuAD-style files: SQuAD's metrics, or the
// best answer span per question (what `berth eval` and `berth predict` do for such a model).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>

#include "berth/model/task_model.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/question_answering_job.h"

namespace berth::train {

struct QuestionAnsweringRun {
  std::string model_dir;
  std::string input;   // a .jsonl or SQuAD .json file
  std::string output;  // eval: metrics JSON; predict: answers JSONL (empty: the `out` stream)
  size_t batch_size = 32;
  size_t max_length = 0;  // 0: the length the model was trained at (training_args.json), else its limit
  std::string device = "auto";
  bool bf16 = false;  // eval: the forward under bf16 autocast
  QuestionAnsweringOptions options;
};

// Loss, exact match and F1 over the input's questions, printed to `out` (and written to run.output as
// JSON); returns them.
std::map<std::string, double> run_question_answering_eval(const QuestionAnsweringRun& run,
                                                          std::shared_ptr<TaskModel> model,
                                                          const tokenizer::Tokenizer& tokenizer,
                                                          std::ostream& out);

// One JSON line per question: {"id", "answer", "start", "end", "score"} (v2: "score_diff", and "" as the
// answer when the null answer wins), start/end in characters (code points) of the context, score the
// answer's probability among the n best. The lines go to run.output (atomically, with "predict: N answers
// -> FILE" to `log`), else to `out`; returns how many.
size_t run_question_answering_predict(const QuestionAnsweringRun& run, std::ostream& out, std::ostream& log);

}  // namespace berth::train
