// Named BERT sizes (bert-tiny ... bert-base) for training from scratch and benchmarks.
#pragma once

#include "berth/model/bert_config.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace berth {

// The sizes of Google's BERT miniatures (Turc et al., 2019, "Well-Read Students Learn Better") and
// bert-base-uncased; everything else is BertConfig's (HF's) default.
//   bert-tiny:  2 layers, hidden 128, 2 heads, intermediate 512
//   bert-mini:  4 layers, hidden 256, 4 heads, intermediate 1024
//   bert-small: 4 layers, hidden 512, 8 heads, intermediate 2048
//   bert-base: 12 layers, hidden 768, 12 heads, intermediate 3072
std::vector<std::string> bert_preset_names();

// The preset's config with the given vocabulary size. An unknown name throws berth::Error listing the
// presets.
BertConfig bert_preset(std::string_view name, int64_t vocab_size = 30522);

}  // namespace berth
