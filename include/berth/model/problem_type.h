// The problem types of HF's *ForSequenceClassification heads, as config.json's "problem_type" spells them.
#pragma once

namespace berth {

// Unset in a config means "decide from the labels" (see BertForSequenceClassification's forward).
inline constexpr const char* kRegression = "regression";
inline constexpr const char* kSingleLabelClassification = "single_label_classification";
inline constexpr const char* kMultiLabelClassification = "multi_label_classification";

}  // namespace berth
