// The mapping between label names and class ids, as HF configs hold it (id2label / label2id).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::data {

class LabelMap {
 public:
  LabelMap() = default;

  // Ids are positions: labels[i] gets id i. Duplicate or empty names throw berth::Error.
  explicit LabelMap(std::vector<std::string> labels);

  // From the labels found in training data, in a deterministic order independent of the data's order:
  // numerically when every label is an integer ("2" before "10"), else bytewise. Duplicates are fine.
  static LabelMap from_observed(const std::vector<std::string>& labels);

  // From HF's JSON shape: an object with "id2label" ({"0": "ham", "1": "spam"}, string keys) and/or
  // "label2id" ({"ham": 0, "spam": 1}), e.g. the text of a model's config.json. Ids must be exactly 0..n-1
  // and the two maps must agree; `source` (a file name) starts every error message.
  static LabelMap from_json(std::string_view json_text, std::string_view source);

  // {"id2label": {"0": ..., ...}, "label2id": {...: 0, ...}}, keys of id2label in id order.
  std::string to_json() const;

  std::optional<int64_t> find(std::string_view label) const;
  const std::string& label(int64_t id) const;  // id out of range -> berth::Error
  const std::vector<std::string>& labels() const { return labels_; }
  size_t size() const { return labels_.size(); }
  bool empty() const { return labels_.empty(); }
  // "ham, spam" (at most the first 20): for messages about unknown labels.
  std::string describe() const;

  bool operator==(const LabelMap& other) const { return labels_ == other.labels_; }
  bool operator!=(const LabelMap& other) const { return !(*this == other); }

 private:
  std::vector<std::string> labels_;
  std::map<std::string, int64_t, std::less<>> ids_;  // less<>: look up string_views without a copy
};

}  // namespace berth::data
