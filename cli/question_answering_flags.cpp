// The question-answering flags `berth train`, `berth eval` and `berth predict` share (run_qa.py's names).
#include "question_answering_flags.h"

#include "count_flag.h"

namespace berth::cli {
namespace {

// A --doc-stride given on the command line; unset keeps QuestionAnsweringOptions' default.
void add_doc_stride(CLI::App& command, train::QuestionAnsweringOptions& options) {
  command
      .add_option_function<size_t>(
          "--doc-stride", [&options](const size_t& stride) { options.doc_stride = stride; },
          "question-answering: tokens each window of a long context shares with the one before (default: "
          "128, "
          "or a quarter of --max-length when that is smaller)")
      ->check(whole_number("--doc-stride 128"));
}

}  // namespace

void add_question_answering_flags(CLI::App& command, train::QuestionAnsweringOptions& options) {
  data::QuestionAnsweringColumns& columns = options.columns;
  command.add_option("--question-column", columns.question, "question-answering: JSON key of the question")
      ->capture_default_str();
  command.add_option("--context-column", columns.context, "question-answering: JSON key of the context")
      ->capture_default_str();
  command
      .add_option("--answer-column", columns.answers,
                  "question-answering: JSON key of the answers {\"text\": [...], \"answer_start\": [...]}")
      ->capture_default_str();
  command.add_option("--id-column", columns.id, "question-answering: JSON key of the question's id")
      ->capture_default_str();
  add_doc_stride(command, options);
  command
      .add_option(
          "--pad-to-max-length", options.pad_to_max_length,
          "question-answering: pad every window to --max-length (run_qa.py's default), else per batch")
      ->capture_default_str();
  train::QuestionAnsweringPostprocessOptions& answers = options.postprocess;
  command
      .add_option("--n-best-size", answers.n_best_size,
                  "question-answering: start and end candidates per window, answers kept per question")
      ->check(positive_whole_number("--n-best-size 20 (run_qa.py's default)"))
      ->capture_default_str();
  command
      .add_option("--max-answer-length", answers.max_answer_length,
                  "question-answering: the longest answer in tokens")
      ->check(positive_whole_number("--max-answer-length 30 (run_qa.py's default)"))
      ->capture_default_str();
  command.add_flag("--version-2-with-negative", answers.version_2_with_negative,
                   "question-answering: SQuAD v2, questions may have no answer (squad_v2 metrics)");
  command
      .add_option("--null-score-diff-threshold", answers.null_score_diff_threshold,
                  "question-answering, SQuAD v2: answer nothing when the null score beats the best span's "
                  "by more than this")
      ->capture_default_str();
}

}  // namespace berth::cli
