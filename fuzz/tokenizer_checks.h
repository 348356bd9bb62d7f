// The checks every tokenizer target makes on a tokenizer that loaded: encoding and decoding a few texts
// does not crash, an encoding's arrays have one length, the text's own tokens are inside the vocabulary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "berth/core/error.h"
#include "berth/tokenizer/tokenizer.h"
#include "fuzz_support.h"

namespace berth_fuzz {

inline void check_encoding(const berth::tokenizer::Encoding& e, size_t vocab_size) {
  const size_t n = e.ids.size();
  require(e.type_ids.size() == n && e.attention_mask.size() == n && e.special_tokens_mask.size() == n &&
              e.offsets.size() == n,
          "tokenizer", "an encoding's arrays have one length");
  for (size_t i = 0; i < n; ++i) {
    require(e.offsets[i].first <= e.offsets[i].second, "tokenizer", "offsets run forwards");
    // Special and padding ids are the file's to choose (HF does not check them either); the text's own
    // tokens come from the vocabulary.
    if (e.special_tokens_mask[i] == 0 && e.attention_mask[i] == 1)
      require(e.ids[i] >= 0 && static_cast<size_t>(e.ids[i]) < vocab_size, "tokenizer",
              "a text token's id is inside the vocabulary");
  }
  for (const auto& overflow : e.overflowing) check_encoding(overflow, vocab_size);
}

inline void exercise_tokenizer(const berth::tokenizer::Tokenizer& tokenizer) {
  static const std::vector<std::string_view> texts = {
      "Hello, world! It's 2026.", "  caf\xc3\xa9  na\xc3\xafve\t\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e ", "",
      "<s>[CLS] a</s> [SEP] [MASK]<unk>", "\xf0\x9f\x98\x80\xe2\x80\x8d\xf0\x9f\x91\x8d x\r\ny"};
  const size_t vocab = tokenizer.vocab_size();
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      const auto encoding =
          i % 2 ? tokenizer.encode(texts[i], texts[(i + 1) % texts.size()]) : tokenizer.encode(texts[i]);
      check_encoding(encoding, vocab);
      (void)tokenizer.decode(encoding.ids, i % 2 == 0);
    } catch (const berth::Error&) {
      // A tokenizer.json can hold a truncation the texts cannot meet, or no unk token for an unknown piece.
    }
  }
  try {
    check_encoding(tokenizer.encode_words({"Hello", "w\xc3\xb6rld", ""}), vocab);
  } catch (const berth::Error&) {
  }
  (void)tokenizer.decode({0, 1, 2, static_cast<int64_t>(vocab), -1});
  for (int64_t id : {int64_t{0}, static_cast<int64_t>(vocab) - 1}) {
    try {
      const std::string token = tokenizer.id_to_token(id);
      (void)tokenizer.token_to_id(token);
    } catch (const berth::Error&) {
    }
  }
}

}  // namespace berth_fuzz
