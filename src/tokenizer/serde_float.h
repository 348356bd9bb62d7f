// serde_json_float: a JSON number as HF tokenizers reads it. tokenizers parses tokenizer.json with
// serde_json, whose default float parser is not correctly rounded: it reads the digits as one integer and
// multiplies or divides it by a single power of ten, which can land one unit in the last place off the
// nearest double. Unigram's Viterbi decides ties between segmentations of the same pieces in that last place,
// so berth reads the scores the way HF does to choose as HF chooses.
#pragma once

#include <string_view>

namespace berth::tokenizer {

// text: a JSON number ("-9.823886016105973", "1.5e-05", "-10") -> the double serde_json gives it.
double serde_json_float(std::string_view text);

// The same for a number already read as the nearest double: its shortest digits (what tokenizers writes)
// read as serde_json reads them.
double serde_json_float(double nearest);

}  // namespace berth::tokenizer
