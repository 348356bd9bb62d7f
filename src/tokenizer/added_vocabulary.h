// AddedVocabulary: tokenizer.json's "added_tokens", found in the text before the pipeline runs, as HF's
// AddedVocabulary finds them: leftmost-longest, unnormalized tokens in the raw text, normalized ones in the
// normalized text, with single_word, lstrip and rstrip (private to the library).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "berth/tokenizer/aligned_text.h"
#include "berth/tokenizer/normalizer.h"

namespace berth::tokenizer {

struct AddedTokenSpec {
  std::string content;
  int64_t id = 0;
  bool special = false;
  bool normalized = true;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
};

// A part of the text: an added token (id set) or text for the pipeline.
struct TextPart {
  AlignedText text;
  std::optional<int64_t> added_id;
  bool special = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` normalizes the content of the normalized tokens, as HF does when it builds its matcher.
  AddedVocabulary(std::vector<AddedTokenSpec> tokens, const Normalizer* normalizer);
  static std::vector<AddedTokenSpec> parse(const nlohmann::json& list, const std::string& path);

  // The text's parts: added tokens found in it, the rest normalized by `normalizer` (may be null).
  std::vector<TextPart> split(std::string_view text, const Normalizer* normalizer) const;
  const std::vector<AddedTokenSpec>& tokens() const { return tokens_; }
  std::optional<int64_t> token_to_id(const std::string& content) const;

 private:
  struct Trie;
  // Splits each part without an id at matches of `trie`.
  void split_parts(std::vector<TextPart>& parts, const Trie& trie) const;

  std::vector<AddedTokenSpec> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::shared_ptr<Trie> raw_;         // normalized == false
  std::shared_ptr<Trie> normalized_;  // normalized == true, keyed by normalized content
};

}  // namespace berth::tokenizer
