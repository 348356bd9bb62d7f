// SQuAD v1.1 and v2.0 exact match and F1, as the official evaluation scripts define them.
#include "berth/tasks/squad_metrics.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "berth/core/error.h"

namespace berth::tasks {
namespace {

bool is_ascii_punctuation(unsigned char c) { return c < 128 && std::ispunct(c); }

// A character of a \w word for the articles' \b: ASCII letters, digits, '_' and any non-ASCII byte (the
// scripts' Python regex counts Unicode letters as word characters).
bool is_word_byte(unsigned char c) { return c >= 128 || std::isalnum(c) || c == '_'; }

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

// remove_articles: re.sub(r"\b(a|an|the)\b", " ", text).
std::string remove_articles(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const bool boundary = i == 0 || !is_word_byte(static_cast<unsigned char>(text[i - 1]));
    size_t matched = 0;
    if (boundary) {
      for (const char* article : {"the", "an", "a"}) {
        const size_t n = std::char_traits<char>::length(article);
        if (text.compare(i, n, article) == 0 &&
            (i + n == text.size() || !is_word_byte(static_cast<unsigned char>(text[i + n])))) {
          matched = n;
          break;
        }
      }
    }
    if (matched) {
      out += ' ';
      i += matched;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::vector<std::string> answer_tokens(std::string_view text) { return split_words(normalize_answer(text)); }

double metric_max(double (*metric)(std::string_view, std::string_view), const std::string& prediction,
                  const std::vector<std::string>& golds) {
  double best = 0;
  for (const std::string& gold : golds) best = std::max(best, metric(prediction, gold));
  return best;
}

// evaluate-v2.0.py's compute_f1: an empty answer on either side scores 1 only against another empty one.
double squad_v2_f1(std::string_view prediction, std::string_view truth) {
  const auto predicted = answer_tokens(prediction);
  const auto gold = answer_tokens(truth);
  if (predicted.empty() || gold.empty()) return predicted == gold ? 1.0 : 0.0;
  return squad_f1(prediction, truth);
}

void check_sizes(const std::vector<std::string>& predictions,
                 const std::vector<std::vector<std::string>>& golds) {
  BERTH_BUG(predictions.size() == golds.size(), "squad metrics: ", predictions.size(), " predictions for ",
            golds.size(), " examples");
}

}  // namespace

std::string normalize_answer(std::string_view text) {
  std::string lowered;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (is_ascii_punctuation(byte)) continue;
    lowered += static_cast<char>(byte < 128 ? std::tolower(byte) : byte);
  }
  const std::vector<std::string> words = split_words(remove_articles(lowered));
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

double squad_exact_match(std::string_view prediction, std::string_view truth) {
  return normalize_answer(prediction) == normalize_answer(truth) ? 1.0 : 0.0;
}

double squad_f1(std::string_view prediction, std::string_view truth) {
  const auto predicted = answer_tokens(prediction);
  const auto gold = answer_tokens(truth);
  std::map<std::string, int> gold_counts;
  for (const auto& word : gold) ++gold_counts[word];
  int common = 0;
  for (const auto& word : predicted) {
    auto it = gold_counts.find(word);
    if (it != gold_counts.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(predicted.size());
  const double recall = static_cast<double>(common) / static_cast<double>(gold.size());
  return 2 * precision * recall / (precision + recall);
}

std::map<std::string, double> squad_metrics(const std::vector<std::string>& predictions,
                                            const std::vector<std::vector<std::string>>& golds) {
  check_sizes(predictions, golds);
  double exact = 0, f1 = 0;
  for (size_t i = 0; i < predictions.size(); ++i) {
    exact += metric_max(squad_exact_match, predictions[i], golds[i]);
    f1 += metric_max(squad_f1, predictions[i], golds[i]);
  }
  const double total = predictions.empty() ? 1.0 : static_cast<double>(predictions.size());
  return {{"exact_match", 100.0 * exact / total}, {"f1", 100.0 * f1 / total}};
}

std::map<std::string, double> squad_v2_metrics(const std::vector<std::string>& predictions,
                                               const std::vector<std::vector<std::string>>& golds) {
  check_sizes(predictions, golds);
  // [all, answerable, unanswerable] x [exact sum, f1 sum, count]
  double sums[3][3] = {};
  for (size_t i = 0; i < predictions.size(); ++i) {
    std::vector<std::string> answers;
    for (const std::string& gold : golds[i])
      if (!normalize_answer(gold).empty()) answers.push_back(gold);
    const bool answerable = !answers.empty();
    if (!answerable) answers = {""};
    const double exact = metric_max(squad_exact_match, predictions[i], answers);
    const double f1 = metric_max(squad_v2_f1, predictions[i], answers);
    for (int group : {0, answerable ? 1 : 2}) {
      sums[group][0] += exact;
      sums[group][1] += f1;
      sums[group][2] += 1;
    }
  }
  std::map<std::string, double> out;
  const char* prefixes[3] = {"", "HasAns_", "NoAns_"};
  for (int group = 0; group < 3; ++group) {
    if (group > 0 && sums[group][2] == 0) continue;
    const double count = std::max(sums[group][2], 1.0);
    const std::string prefix = prefixes[group];
    out[prefix + "exact"] = 100.0 * sums[group][0] / count;
    out[prefix + "f1"] = 100.0 * sums[group][1] / count;
    out[prefix + "total"] = sums[group][2];
  }
  return out;
}

}  // namespace berth::tasks
