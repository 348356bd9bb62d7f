// utils_qa.py's postprocess_qa_predictions against its steps run in Python (goldens from
// tests/goldens/question_answering_goldens.py; utils_qa.py is an example script in transformers' repository,
// not an installable package): over random start/end logits for the bert_48 windows (several windows per
// example, padding, unanswerable questions), SQuAD v1, and v2 at three thresholds (one negative, which
// favours no answer), n_best_size and max_answer_length varied. The answer texts, their character spans and
// their probabilities must agree.
#include "berth/train/question_answering_postprocess.h"

#include "berth/tokenizer/tokenizer_files.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace berth::train {
namespace {

std::string qa_postprocess_dir() { return testing::golden_dir() + "/question_answering"; }

at::Tensor qa_postprocess_matrix(const nlohmann::json& rows) {
  std::vector<float> values;
  for (const auto& row : rows)
    for (const auto& v : row) values.push_back(v.get<float>());
  return torch::tensor(values).reshape({static_cast<int64_t>(rows.size()), -1});
}

TEST(QuestionAnsweringPostprocess, EqualsUtilsQa) {
  std::ifstream in(qa_postprocess_dir() + "/postprocess.json");
  ASSERT_TRUE(in.good()) << "no golden: build the berth_goldens target";
  const nlohmann::json golden = nlohmann::json::parse(in);
  const auto examples =
      data::load_question_answering_examples(qa_postprocess_dir() + "/examples.jsonl", {}, /*labeled=*/true);
  data::QuestionAnsweringFeatureOptions windows;
  windows.max_length = 48;
  windows.doc_stride = 16;
  const auto features = data::prepare_question_answering_features(
      examples, tokenizer::load_tokenizer(testing::bert_base_uncased_dir()), windows, true);
  const at::Tensor start = qa_postprocess_matrix(golden.at("start_logits"));
  const at::Tensor end = qa_postprocess_matrix(golden.at("end_logits"));
  size_t null_answers = 0;
  for (const auto& run : golden.at("runs")) {
    QuestionAnsweringPostprocessOptions options;
    options.version_2_with_negative = run.at("version_2_with_negative").get<bool>();
    options.n_best_size = run.at("n_best_size").get<size_t>();
    options.max_answer_length = run.at("max_answer_length").get<size_t>();
    options.null_score_diff_threshold = run.at("null_score_diff_threshold").get<double>();
    const auto answers = postprocess_qa_predictions(examples, features, start, end, options);
    const auto& want = run.at("predictions");
    ASSERT_EQ(answers.size(), want.size());
    for (size_t i = 0; i < answers.size(); ++i) {
      const std::string where = want[i].at("id").get<std::string>() + " in run " + run.dump().substr(0, 120);
      EXPECT_EQ(answers[i].id, want[i].at("id").get<std::string>());
      EXPECT_EQ(answers[i].text, want[i].at("text").get<std::string>()) << where;
      EXPECT_EQ(answers[i].span_text, want[i].at("chosen_text").get<std::string>()) << where;
      EXPECT_EQ(answers[i].start, want[i].at("start").get<size_t>()) << where;
      EXPECT_EQ(answers[i].end, want[i].at("end").get<size_t>()) << where;
      EXPECT_NEAR(answers[i].probability, want[i].at("probability").get<double>(), 1e-6) << where;
      EXPECT_NEAR(answers[i].score, want[i].at("score").get<double>(), 1e-6) << where;
      ASSERT_EQ(answers[i].score_diff.has_value(), want[i].contains("score_diff")) << where;
      if (answers[i].score_diff)
        EXPECT_NEAR(*answers[i].score_diff, want[i].at("score_diff").get<double>(), 1e-6);
      null_answers += answers[i].text.empty();
    }
  }
  EXPECT_GT(null_answers, 0u);  // the v2 runs answer some questions with nothing
}

}  // namespace
}  // namespace berth::train
