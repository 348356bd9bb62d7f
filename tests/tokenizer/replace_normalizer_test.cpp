// Replace within whole normalizers against HF tokenizers: Llama 2's (Prepend + Replace " " -> U+2581) and
// runs of whitespace squeezed to one space between NFD, Lowercase, StripAccents and Strip, on every case and
// email, each normalized code point's original range included (HF gives a replacement the last matched
// range).
#include <gtest/gtest.h>

#include "support/normalizer_goldens.h"

namespace {

TEST(ReplaceNormalizerGolden, Llama2sNormalizer) {
  EXPECT_GT(berth::testing::check_normalized_texts("llama2"), 6000u);
}

TEST(ReplaceNormalizerGolden, SqueezedWhitespaceBetweenOtherSteps) {
  EXPECT_GT(berth::testing::check_normalized_texts("squeeze-whitespace"), 6000u);
}

}  // namespace
