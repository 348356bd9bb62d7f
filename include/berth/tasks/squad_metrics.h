// SQuAD's exact match and F1 as the official evaluation scripts compute them (v1.1's evaluate-v1.1.py, v2.0's
// evaluate-v2.0.py, which HF's squad and squad_v2 metrics wrap): answers normalised (lower case, no
// punctuation, no articles, single spaces), the best over the gold answers, averaged, as percentages.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace berth::tasks {

// normalize_answer: lower-cased, ASCII punctuation removed, the words a/an/the removed, whitespace collapsed.
std::string normalize_answer(std::string_view text);
// 1 when the normalised texts are equal, else 0.
double squad_exact_match(std::string_view prediction, std::string_view truth);
// v1.1's f1_score: the harmonic mean of token precision and recall over the normalised words (0 when they
// share none).
double squad_f1(std::string_view prediction, std::string_view truth);

// v1.1 (HF's squad metric): {"exact_match", "f1"} in 0..100, each example's best over its gold answers.
// predictions[i] answers the example whose gold answers are golds[i] (each non-empty).
std::map<std::string, double> squad_metrics(const std::vector<std::string>& predictions,
                                            const std::vector<std::vector<std::string>>& golds);

// v2.0 (HF's squad_v2 metric without the best-threshold search): "exact", "f1", "total", and the same over
// the answerable ("HasAns_") and unanswerable ("NoAns_") examples when there are any. An example without
// gold answers is answered right by "" alone; F1 between an empty and a non-empty answer is 0.
std::map<std::string, double> squad_v2_metrics(const std::vector<std::string>& predictions,
                                               const std::vector<std::vector<std::string>>& golds);

}  // namespace berth::tasks
