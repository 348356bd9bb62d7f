// AddedVocabulary: a code point trie per kind of added token, scanned leftmost-longest as HF's aho-corasick
// matcher (MatchKind::LeftmostLongest) scans.
#include "added_vocabulary.h"

#include <utf8proc.h>

#include "json_fields.h"
#include "unicode_props.h"

namespace berth::tokenizer {
namespace {

bool is_space(char32_t c) { return (unicode::classes_of(c) & unicode::kWhitespace) != 0; }

// regex_syntax's word character: alphanumeric or '_'.
bool is_word(char32_t c) {
  if (c == U'_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace

struct AddedVocabulary::Trie {
  struct Node {
    std::unordered_map<char32_t, uint32_t> next;
    int64_t token = -1;  // index into tokens_
  };
  std::vector<Node> nodes{1};
  bool ascii_first[128] = {};
  bool other_first = false;

  void add(const std::u32string& key, size_t token) {
    uint32_t node = 0;
    for (char32_t c : key) {
      auto it = nodes[node].next.find(c);
      if (it == nodes[node].next.end()) {
        nodes.emplace_back();
        it = nodes[node].next.emplace(c, static_cast<uint32_t>(nodes.size() - 1)).first;
      }
      node = it->second;
    }
    if (nodes[node].token < 0) nodes[node].token = static_cast<int64_t>(token);
    const char32_t first = key.front();
    if (first < 128)
      ascii_first[first] = true;
    else
      other_first = true;
  }
  // Whether some token starts with c (a quick test before the trie's hash lookup).
  bool starts_token(char32_t c) const { return c < 128 ? ascii_first[c] : other_first; }
  // The longest token starting at chars[at]: (token index, length), or (-1, 0).
  std::pair<int64_t, size_t> longest(const std::vector<AlignedText::Char>& chars, size_t at) const {
    std::pair<int64_t, size_t> best{-1, 0};
    uint32_t node = 0;
    for (size_t i = at; i < chars.size(); ++i) {
      auto it = nodes[node].next.find(chars[i].c);
      if (it == nodes[node].next.end()) break;
      node = it->second;
      if (nodes[node].token >= 0) best = {nodes[node].token, i + 1 - at};
    }
    return best;
  }
  bool empty() const { return nodes.size() == 1; }
};

std::vector<AddedTokenSpec> AddedVocabulary::parse(const nlohmann::json& list, const std::string& path) {
  std::vector<AddedTokenSpec> out;
  if (list.is_null()) return out;
  BERTH_CHECK(list.is_array(), path, ": expected a list of added tokens, found ", list.type_name());
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonFields f(list[i], path + "[" + std::to_string(i) + "]");
    AddedTokenSpec t;
    t.content = f.required<std::string>("content");
    t.id = f.required<int64_t>("id");
    t.special = f.get<bool>("special", false);
    t.normalized = f.get<bool>("normalized", !t.special);
    t.single_word = f.get<bool>("single_word", false);
    t.lstrip = f.get<bool>("lstrip", false);
    t.rstrip = f.get<bool>("rstrip", false);
    BERTH_CHECK(!t.content.empty(), f.at("content"), ": an added token cannot be empty");
    out.push_back(std::move(t));
  }
  return out;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedTokenSpec> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)), raw_(std::make_shared<Trie>()), normalized_(std::make_shared<Trie>()) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedTokenSpec& t = tokens_[i];
    by_content_.emplace(t.content, i);
    AlignedText key = AlignedText::from_utf8(t.content);
    if (t.normalized && normalizer) normalizer->normalize(key);
    std::u32string code_points;
    for (const auto& ch : key.chars) code_points.push_back(ch.c);
    if (code_points.empty()) continue;
    (t.normalized ? *normalized_ : *raw_).add(code_points, i);
  }
}

std::optional<int64_t> AddedVocabulary::token_to_id(const std::string& content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

void AddedVocabulary::split_parts(std::vector<TextPart>& parts, const Trie& trie) const {
  if (trie.empty()) return;
  std::vector<TextPart> out;
  for (TextPart& part : parts) {
    if (part.added_id) {
      out.push_back(std::move(part));
      continue;
    }
    const auto& chars = part.text.chars;
    size_t start_offset = 0;
    for (size_t at = 0; at < chars.size();) {
      if (!trie.starts_token(chars[at].c)) {
        ++at;
        continue;
      }
      const auto [token, length] = trie.longest(chars, at);
      if (token < 0) {
        ++at;
        continue;
      }
      const AddedTokenSpec& t = tokens_[static_cast<size_t>(token)];
      size_t start = at, stop = at + length;
      at = stop;
      if (t.single_word) {
        const bool space_before = start == 0 || !is_word(chars[start - 1].c);
        const bool space_after = stop == chars.size() || !is_word(chars[stop].c);
        if (!space_before || !space_after) continue;
      }
      if (t.lstrip) {
        size_t first = start;
        while (first > 0 && is_space(chars[first - 1].c)) --first;
        start = std::max(first, start_offset);
      }
      if (t.rstrip)
        while (stop < chars.size() && is_space(chars[stop].c)) ++stop;
      at = stop;
      if (start_offset < start) out.push_back({part.text.slice(start_offset, start), std::nullopt, false});
      out.push_back({part.text.slice(start, stop), t.id, t.special});
      start_offset = stop;
    }
    if (start_offset < chars.size())
      out.push_back({part.text.slice(start_offset, chars.size()), std::nullopt, false});
  }
  parts = std::move(out);
}

std::vector<TextPart> AddedVocabulary::split(std::string_view text, const Normalizer* normalizer) const {
  std::vector<TextPart> parts;
  parts.push_back({AlignedText::from_utf8(text), std::nullopt, false});
  if (raw_) split_parts(parts, *raw_);
  for (TextPart& part : parts)
    if (!part.added_id && normalizer) normalizer->normalize(part.text);
  if (normalized_) split_parts(parts, *normalized_);
  return parts;
}

}  // namespace berth::tokenizer
