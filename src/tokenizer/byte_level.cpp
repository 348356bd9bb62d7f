// GPT-2's byte-level table and HF ByteLevel's split of plain strings (the trainer's word counting).
#include "berth/tokenizer/byte_level.h"

#include <algorithm>
#include <array>

#include "regex.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

// byte_char(b) as UTF-8, for every byte.
const std::array<std::string, 256>& byte_strings() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    for (int b = 0; b < 256; ++b) utf8::append(t[b], byte_char(static_cast<unsigned char>(b)));
    return t;
  }();
  return table;
}

void append_byte_level(std::string_view part, std::vector<std::string>& words) {
  if (part.empty()) return;  // HF drops empty splits
  const auto& strings = byte_strings();
  std::string word;
  word.reserve(part.size() * 2);
  for (char b : part) word += strings[static_cast<unsigned char>(b)];
  words.push_back(std::move(word));
}

}  // namespace

char32_t byte_char(unsigned char byte) {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table[byte];
}

std::vector<char32_t> byte_level_alphabet() {
  std::vector<char32_t> alphabet;
  for (int b = 0; b < 256; ++b) alphabet.push_back(byte_char(static_cast<unsigned char>(b)));
  std::sort(alphabet.begin(), alphabet.end());
  return alphabet;
}

void byte_level_words(std::string_view text, bool add_prefix_space, std::vector<std::string>& words) {
  for (size_t pos = 0; pos < text.size();) utf8::decode(text, pos);  // throws on malformed UTF-8
  // Regex is thread safe: its compiled pattern is only read.
  static const Regex regex(kGpt2Pattern, "ByteLevel");
  std::string prefixed;
  if (add_prefix_space && !text.empty() && text.front() != ' ') {
    prefixed.reserve(text.size() + 1);
    prefixed.append(1, ' ').append(text);
    text = prefixed;
  }
  // HF's Isolated split: every match is a word, and so is the text between two matches.
  size_t previous = 0;
  for (const auto& [begin, end] : regex.find_all(text)) {
    append_byte_level(text.substr(previous, begin - previous), words);
    append_byte_level(text.substr(begin, end - begin), words);
    previous = end;
  }
  append_byte_level(text.substr(previous), words);
}

}  // namespace berth::tokenizer
