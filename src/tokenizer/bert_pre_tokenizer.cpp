// BertPreTokenizer: one scan, classes from HF tokenizers' own tables.
#include "berth/tokenizer/bert_pre_tokenizer.h"

#include "tokenizer/unicode_props.h"
#include "tokenizer/utf8.h"

namespace berth::tokenizer {

void BertPreTokenizer::split(const NormalizedText& text, std::vector<Word>& out, uint32_t byte_begin,
                             uint32_t char_begin) {
  const std::string& s = text.text;
  const uint32_t size = static_cast<uint32_t>(s.size());
  Word word{byte_begin, byte_begin, char_begin, char_begin};
  const auto close_word = [&](uint32_t byte, uint32_t ch) {
    if (word.byte_end > word.byte_begin) out.push_back(word);
    word = {byte, byte, ch, ch};
  };
  const unicode::ClassTable& table = unicode::class_table();
  uint32_t pos = byte_begin;
  uint32_t ch = char_begin;
  while (pos < size) {
    const auto byte = static_cast<unsigned char>(s[pos]);
    uint8_t classes;
    uint32_t next = pos;
    if (byte < 0x80) {
      classes = unicode::kAsciiClasses.of[byte];
      ++next;
    } else {
      size_t p = pos;
      classes = unicode::classes_of(table, utf8::decode_valid(s.data(), p));
      next = static_cast<uint32_t>(p);
    }
    if (classes & unicode::kWhitespace) {
      close_word(next, ch + 1);
    } else if (classes & unicode::kPunct) {
      close_word(pos, ch);
      out.push_back({pos, next, ch, ch + 1});
      word = {next, next, ch + 1, ch + 1};
    } else {
      word.byte_end = next;
      word.char_end = ch + 1;
    }
    pos = next;
    ++ch;
  }
  close_word(pos, ch);
}

std::vector<std::string> BertPreTokenizer::split_strings(const NormalizedText& text) {
  std::vector<Word> words;
  split(text, words);
  std::vector<std::string> out;
  out.reserve(words.size());
  for (const Word& w : words) out.emplace_back(text.text.substr(w.byte_begin, w.byte_end - w.byte_begin));
  return out;
}

}  // namespace berth::tokenizer
