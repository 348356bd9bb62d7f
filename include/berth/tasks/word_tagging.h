// Predicting with a token classifier: a label for every word of each input row, with character offsets,
// and the entities the words form (what `berth predict` does for such a model).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace berth::tasks {

// Reads `input` (JSONL: {"text": "..."} split at whitespace, or {"tokens": [...]} already split) and writes
// one JSON line per row to `output` (atomically, with "predict: N rows -> FILE" to `log`), else to `out`:
// {"words": [{"word", "start", "end", "label", "score"}], "entities": [{"entity_group", "score", "word",
// "start", "end"}]}. Offsets are code points into the text (for "tokens", into the words joined by single
// spaces); a word's label is its first sub-token's, and entities group words as HF's token-classification
// pipeline with aggregation_strategy="first" does. Returns the number of rows.
size_t tag_words(const std::string& model_dir, const std::string& input, const std::string& output,
                 const std::string& device, size_t max_length, std::ostream& out, std::ostream& log);

}  // namespace berth::tasks
