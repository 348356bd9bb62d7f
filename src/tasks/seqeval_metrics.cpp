// seqeval's default-mode entities and scores, as run_ner.py reports them.
#include "berth/tasks/seqeval_metrics.h"

#include "berth/core/error.h"

#include <torch/torch.h>

#include <set>
#include <tuple>

namespace berth::tasks {
namespace {

// A tag split as seqeval splits it: its first character (the prefix) and the type after the first '-' that
// follows ("_" when there is none).
struct SplitTag {
  std::string prefix;
  std::string type;
};

SplitTag split_tag(const std::string& chunk) {
  const auto lead = static_cast<unsigned char>(chunk.empty() ? 0 : chunk[0]);
  const size_t first = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;  // one code point
  SplitTag out{chunk.substr(0, first), ""};
  const std::string rest = chunk.size() > first ? chunk.substr(first) : "";
  const size_t dash = rest.find('-');
  out.type = dash == std::string::npos ? rest : rest.substr(dash + 1);
  if (out.type.empty()) out.type = "_";
  return out;
}

bool ends_chunk(const SplitTag& prev, const SplitTag& tag) {
  const std::string& p = prev.prefix;
  const std::string& t = tag.prefix;
  if (p == "E" || p == "S") return true;
  if ((p == "B" || p == "I") && (t == "B" || t == "S" || t == "O")) return true;
  return p != "O" && p != "." && prev.type != tag.type;
}

bool starts_chunk(const SplitTag& prev, const SplitTag& tag) {
  const std::string& p = prev.prefix;
  const std::string& t = tag.prefix;
  if (t == "B" || t == "S") return true;
  if ((p == "E" || p == "S" || p == "O") && (t == "E" || t == "I")) return true;
  return t != "O" && t != "." && prev.type != tag.type;
}

using EntityKey = std::tuple<std::string, int64_t, int64_t>;

std::set<EntityKey> entity_set(const std::vector<std::vector<std::string>>& sequences) {
  std::set<EntityKey> out;
  for (const SeqevalEntity& e : seqeval_entities(sequences)) out.emplace(e.type, e.begin, e.end);
  return out;
}

}  // namespace

std::vector<SeqevalEntity> seqeval_entities(const std::vector<std::vector<std::string>>& sequences) {
  std::vector<std::string> tags;  // the sequences joined, each followed by "O", then the final "O"
  for (const auto& sequence : sequences) {
    tags.insert(tags.end(), sequence.begin(), sequence.end());
    tags.emplace_back("O");
  }
  tags.emplace_back("O");
  std::vector<SeqevalEntity> out;
  SplitTag prev{"O", ""};
  int64_t begin = 0;
  for (size_t i = 0; i < tags.size(); ++i) {
    const SplitTag tag = split_tag(tags[i]);
    if (ends_chunk(prev, tag)) out.push_back({prev.type, begin, static_cast<int64_t>(i) - 1});
    if (starts_chunk(prev, tag)) begin = static_cast<int64_t>(i);
    prev = tag;
  }
  return out;
}

SeqevalScores seqeval_scores(const std::vector<std::vector<std::string>>& truth,
                             const std::vector<std::vector<std::string>>& predicted) {
  BERTH_CHECK(truth.size() == predicted.size(), "seqeval: ", truth.size(), " true sequences but ",
              predicted.size(), " predicted ones");
  size_t tags = 0, equal = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    BERTH_CHECK(truth[i].size() == predicted[i].size(), "seqeval: sequence ", i, " has ", truth[i].size(),
                " true tags but ", predicted[i].size(), " predicted ones");
    for (size_t j = 0; j < truth[i].size(); ++j) equal += truth[i][j] == predicted[i][j] ? 1 : 0;
    tags += truth[i].size();
  }
  const std::set<EntityKey> true_entities = entity_set(truth);
  const std::set<EntityKey> predicted_entities = entity_set(predicted);
  size_t correct = 0;
  for (const EntityKey& e : predicted_entities) correct += true_entities.count(e);
  SeqevalScores scores;
  const auto ratio = [](size_t a, size_t b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  scores.precision = ratio(correct, predicted_entities.size());
  scores.recall = ratio(correct, true_entities.size());
  const double sum = scores.precision + scores.recall;
  scores.f1 = sum > 0 ? 2 * scores.precision * scores.recall / sum : 0.0;
  scores.accuracy = ratio(equal, tags);
  return scores;
}

std::map<std::string, double> token_classification_metrics(const at::Tensor& logits, const at::Tensor& labels,
                                                           const std::vector<std::string>& label_names) {
  BERTH_CHECK(logits.dim() == 3 && labels.dim() == 2 && logits.size(0) == labels.size(0) &&
                  logits.size(1) == labels.size(1),
              "token classification metrics: logits (N, T, C) and labels (N, T) expected, found ",
              logits.sizes(), " and ", labels.sizes());
  const at::Tensor predictions = logits.argmax(-1).to(at::kLong).contiguous();  // (N, T)
  const at::Tensor gold = labels.to(at::kLong).contiguous();
  const auto name = [&](int64_t id) -> const std::string& {
    BERTH_CHECK(id >= 0 && id < static_cast<int64_t>(label_names.size()),
                "token classification metrics: label id ", id, " outside the model's ", label_names.size(),
                " labels");
    return label_names[static_cast<size_t>(id)];
  };
  std::vector<std::vector<std::string>> truth(static_cast<size_t>(gold.size(0)));
  std::vector<std::vector<std::string>> predicted(truth.size());
  const int64_t* g = gold.data_ptr<int64_t>();
  const int64_t* p = predictions.data_ptr<int64_t>();
  for (int64_t row = 0; row < gold.size(0); ++row) {
    for (int64_t t = 0; t < gold.size(1); ++t) {
      const int64_t at = row * gold.size(1) + t;
      if (g[at] == -100) continue;
      truth[static_cast<size_t>(row)].push_back(name(g[at]));
      predicted[static_cast<size_t>(row)].push_back(name(p[at]));
    }
  }
  const SeqevalScores s = seqeval_scores(truth, predicted);
  return {{"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}, {"accuracy", s.accuracy}};
}

}  // namespace berth::tasks
