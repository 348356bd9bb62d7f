// utils_qa.py's postprocess_qa_predictions over berth's question-answering features.
#include "berth/tasks/question_answering_postprocess.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "berth/core/error.h"

namespace berth::tasks {
namespace {

struct Candidate {
  std::pair<int64_t, int64_t> offsets;  // code points of the context; (0, 0) for the null answer
  double score = 0;
  double start_logit = 0;
  double end_logit = 0;
  std::string text;
};

// np.argsort(logits)[-1 : -n_best_size - 1 : -1]: the positions of the n largest, largest first.
std::vector<int64_t> best_positions(const float* logits, int64_t length, size_t n_best) {
  std::vector<int64_t> order(static_cast<size_t>(length));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logits[a] < logits[b]; });
  std::reverse(order.begin(), order.end());
  order.resize(std::min(order.size(), n_best));
  return order;
}

// One window's spans: every (start, end) of the best starts and ends inside the context, in order, not too
// long.
void add_window_spans(const float* start, const float* end, int64_t length,
                      const std::vector<std::pair<int64_t, int64_t>>& offsets,
                      const QuestionAnsweringPostprocessOptions& options, std::vector<Candidate>& out) {
  const auto size = static_cast<int64_t>(offsets.size());
  const auto max_length = static_cast<int64_t>(options.max_answer_length);
  for (int64_t s : best_positions(start, length, options.n_best_size)) {
    for (int64_t e : best_positions(end, length, options.n_best_size)) {
      if (s >= size || e >= size || offsets[static_cast<size_t>(s)].first < 0 ||
          offsets[static_cast<size_t>(e)].first < 0)
        continue;
      if (e < s || e - s + 1 > max_length) continue;
      out.push_back({{offsets[static_cast<size_t>(s)].first, offsets[static_cast<size_t>(e)].second},
                     static_cast<double>(start[s]) + end[e],
                     start[s],
                     end[e],
                     {}});
    }
  }
}

// The example's answer from its candidates (utils_qa.py after the loop over the windows).
QuestionAnsweringAnswer choose_answer(const data::QuestionAnsweringExample& example,
                                      std::vector<Candidate> spans, const std::optional<Candidate>& null,
                                      const QuestionAnsweringPostprocessOptions& options) {
  const bool v2 = options.version_2_with_negative && null;
  if (v2) spans.push_back(*null);
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  if (spans.size() > options.n_best_size) spans.resize(options.n_best_size);
  const auto is_null = [](const Candidate& c) { return c.offsets == std::pair<int64_t, int64_t>(0, 0); };
  if (v2 && std::none_of(spans.begin(), spans.end(), is_null)) spans.push_back(*null);
  for (Candidate& c : spans)
    c.text = data::code_point_slice(example.context, static_cast<size_t>(c.offsets.first),
                                    static_cast<size_t>(c.offsets.second));
  if (spans.empty() || (spans.size() == 1 && spans[0].text.empty()))
    spans.insert(spans.begin(), Candidate{{0, 0}, 0.0, 0.0, 0.0, "empty"});
  double top = spans[0].score;
  for (const Candidate& c : spans) top = std::max(top, c.score);
  double total = 0;
  for (const Candidate& c : spans) total += std::exp(c.score - top);
  size_t chosen = 0;
  if (v2)
    while (spans[chosen].text.empty()) ++chosen;  // utils_qa.py: the best non-null answer
  const Candidate& best = spans[chosen];
  QuestionAnsweringAnswer answer;
  answer.id = example.id;
  answer.span_text = best.text;
  answer.text = best.text;
  answer.start = static_cast<size_t>(best.offsets.first);
  answer.end = static_cast<size_t>(best.offsets.second);
  answer.score = best.score;
  answer.probability = std::exp(best.score - top) / total;
  if (v2) {
    answer.score_diff = null->score - best.start_logit - best.end_logit;
    if (*answer.score_diff > options.null_score_diff_threshold) answer.text.clear();
  }
  return answer;
}

}  // namespace

std::vector<QuestionAnsweringAnswer> postprocess_qa_predictions(
    const std::vector<data::QuestionAnsweringExample>& examples,
    const data::QuestionAnsweringFeatures& features, const at::Tensor& start_logits,
    const at::Tensor& end_logits, const QuestionAnsweringPostprocessOptions& options) {
  const auto windows = static_cast<int64_t>(features.example_index.size());
  BERTH_BUG(start_logits.dim() == 2 && start_logits.size(0) == windows &&
                end_logits.sizes() == start_logits.sizes(),
            "postprocess_qa_predictions: logits for ", start_logits.dim() ? start_logits.size(0) : 0,
            " windows, the features have ", windows);
  const at::Tensor starts = start_logits.to(at::kCPU).to(at::kFloat).contiguous();
  const at::Tensor ends = end_logits.to(at::kCPU).to(at::kFloat).contiguous();
  const int64_t length = starts.size(1);
  std::vector<std::vector<size_t>> windows_of(examples.size());
  for (size_t w = 0; w < features.example_index.size(); ++w)
    windows_of[features.example_index[w]].push_back(w);
  std::vector<QuestionAnsweringAnswer> answers;
  for (size_t i = 0; i < examples.size(); ++i) {
    std::vector<Candidate> spans;
    std::optional<Candidate> null;  // the lowest null score of the example's windows
    for (size_t w : windows_of[i]) {
      const float* start = starts.data_ptr<float>() + static_cast<int64_t>(w) * length;
      const float* end = ends.data_ptr<float>() + static_cast<int64_t>(w) * length;
      const double null_score = static_cast<double>(start[0]) + end[0];
      if (!null || null->score > null_score) null = Candidate{{0, 0}, null_score, start[0], end[0], {}};
      add_window_spans(start, end, length, features.context_offsets[w], options, spans);
    }
    answers.push_back(choose_answer(examples[i], std::move(spans), null, options));
  }
  return answers;
}

}  // namespace berth::tasks
