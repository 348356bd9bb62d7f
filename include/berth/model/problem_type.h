// The problem types of HF's *ForSequenceClassification heads, as config.json's "problem_type" spells them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace berth {

// Unset in a config means "decide from the labels" (see BertForSequenceClassification's forward).
inline constexpr const char* kRegression = "regression";
inline constexpr const char* kSingleLabelClassification = "single_label_classification";
inline constexpr const char* kMultiLabelClassification = "multi_label_classification";

// The problem type a head reports: the config's, or, when that is unset, what HF's pipelines assume
// (regression for one label, else single-label classification).
inline std::string problem_type_or_default(const std::optional<std::string>& problem_type,
                                           int64_t num_labels) {
  return problem_type.value_or(num_labels == 1 ? kRegression : kSingleLabelClassification);
}

}  // namespace berth
