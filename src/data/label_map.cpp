// LabelMap: label names <-> class ids, and HF's id2label/label2id JSON.
#include "berth/data/label_map.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "berth/core/error.h"

namespace berth::data {
namespace {

// An optional '-' then digits, short enough for int64: labels such as "0", "-1", "42".
bool is_integer(const std::string& text) {
  size_t start = (!text.empty() && text[0] == '-') ? 1 : 0;
  if (text.size() == start || text.size() - start > 18) return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(start), text.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

LabelMap::LabelMap(std::vector<std::string> labels) : labels_(std::move(labels)) {
  for (size_t i = 0; i < labels_.size(); ++i) {
    BERTH_CHECK(!labels_[i].empty(), "label map: label ", i,
                " is empty. Fix: give every class a non-empty name");
    auto [it, inserted] = ids_.emplace(labels_[i], static_cast<int64_t>(i));
    BERTH_CHECK(inserted, "label map: label '", labels_[i], "' appears twice (ids ", it->second, " and ", i,
                "). Fix: give every class its own name");
  }
}

LabelMap LabelMap::from_observed(const std::vector<std::string>& labels) {
  std::vector<std::string> unique(labels.begin(), labels.end());
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  if (std::all_of(unique.begin(), unique.end(), is_integer)) {
    std::sort(unique.begin(), unique.end(),
              [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  }
  return LabelMap(std::move(unique));
}

LabelMap LabelMap::from_json(std::string_view json_text, std::string_view source) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(source, ": expected JSON with id2label/label2id, found invalid JSON (", e.what(),
               "). Fix: the file must be one JSON object, as HF's config.json is");
  }
  BERTH_CHECK(json.is_object(), source, ": expected a JSON object with id2label/label2id, found ",
              json.type_name(), ". Fix: write {\"id2label\": {\"0\": \"neg\", ...}, \"label2id\": {...}}");
  const bool has_id2label = json.contains("id2label") && !json["id2label"].is_null();
  const bool has_label2id = json.contains("label2id") && !json["label2id"].is_null();
  BERTH_CHECK(has_id2label || has_label2id, source,
              ": expected \"id2label\" or \"label2id\", found neither. Fix: add "
              "\"id2label\": {\"0\": \"first label\", ...}");

  // id -> name, from whichever maps are present; both must agree.
  std::map<int64_t, std::string> by_id;
  if (has_id2label) {
    const auto& id2label = json["id2label"];
    BERTH_CHECK(id2label.is_object(), source,
                ": id2label must be an object with string keys (\"0\": \"neg\"), found ",
                id2label.type_name(), ". Fix: write it as HF does: {\"0\": \"neg\", \"1\": \"pos\"}");
    for (const auto& [key, value] : id2label.items()) {
      BERTH_CHECK(is_integer(key), source, ": id2label key '", key,
                  "' is not an integer id. Fix: keys are the ids as strings: \"0\", \"1\", ...");
      BERTH_CHECK(value.is_string(), source, ": id2label[\"", key, "\"] must be a string, found ",
                  value.dump(), ". Fix: map each id to its label name");
      by_id[std::stoll(key)] = value.get<std::string>();
    }
  }
  if (has_label2id) {
    const auto& label2id = json["label2id"];
    BERTH_CHECK(label2id.is_object(), source, ": label2id must be an object ({\"neg\": 0}), found ",
                label2id.type_name(), ". Fix: write it as HF does: {\"neg\": 0, \"pos\": 1}");
    std::map<int64_t, std::string> from_label2id;
    for (const auto& [key, value] : label2id.items()) {
      BERTH_CHECK(value.is_number_integer(), source, ": label2id[\"", key,
                  "\"] must be an integer id, found ", value.dump(), ". Fix: map each label name to its id");
      const auto id = value.get<int64_t>();
      BERTH_CHECK(from_label2id.emplace(id, key).second, source, ": label2id gives id ", id, " to both '",
                  from_label2id[id], "' and '", key, "'. Fix: give every label its own id");
    }
    if (has_id2label) {
      BERTH_CHECK(from_label2id == by_id, source,
                  ": id2label and label2id disagree. Fix: make label2id the exact inverse of id2label "
                  "(or drop one of them)");
    }
    by_id = std::move(from_label2id);
  }
  std::vector<std::string> labels;
  for (const auto& [id, name] : by_id) {
    BERTH_CHECK(id == static_cast<int64_t>(labels.size()), source, ": label ids must be 0..",
                by_id.size() - 1, ", found id ", id, " where ", labels.size(),
                " was expected. Fix: number the labels from 0 without gaps");
    labels.push_back(name);
  }
  try {
    return LabelMap(std::move(labels));
  } catch (const Error& e) {
    BERTH_FAIL(source, ": ", e.what());
  }
}

std::string LabelMap::to_json() const {
  // ordered_json keeps id2label's keys in id order ("10" after "9"), as HF writes them.
  nlohmann::ordered_json id2label = nlohmann::ordered_json::object();
  nlohmann::ordered_json label2id = nlohmann::ordered_json::object();
  for (size_t i = 0; i < labels_.size(); ++i) {
    id2label[std::to_string(i)] = labels_[i];
    label2id[labels_[i]] = i;
  }
  nlohmann::ordered_json out;
  out["id2label"] = id2label;
  out["label2id"] = label2id;
  return out.dump();
}

std::optional<int64_t> LabelMap::find(std::string_view label) const {
  auto it = ids_.find(label);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

const std::string& LabelMap::label(int64_t id) const {
  BERTH_CHECK(id >= 0 && id < static_cast<int64_t>(labels_.size()), "label id ", id, " is out of range: the ",
              labels_.size(), " labels have ids 0..", static_cast<int64_t>(labels_.size()) - 1,
              ". Fix: use a label map with this many classes");
  return labels_[static_cast<size_t>(id)];
}

std::string LabelMap::describe() const {
  std::string out;
  const size_t shown = std::min<size_t>(labels_.size(), 20);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + labels_[i];
  if (shown < labels_.size()) out += ", ... (" + std::to_string(labels_.size()) + " in all)";
  return out;
}

}  // namespace berth::data
