// Helpers for the tokenizer's golden tests: read the JSONL goldens HF tokenizers produced and say where an
// Encoding first differs from one.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "berth/tokenizer/encoding.h"
#include "support/test_support.h"

namespace berth::testing {

// Every line of a golden file; fails the test (and returns nothing) when the build did not generate it.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "missing golden " << path
                  << ": the build generates it with node and the npm packages (scripts/setup installs them)";
    return lines;
  }
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// A code point's UTF-8 bytes (tests build their strings from code points).
inline std::string encode_utf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6)), out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12)), out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18)), out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

template <typename T>
std::string show(const std::vector<T>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  return out.str() + "]";
}

inline std::string show(const std::vector<std::pair<size_t, size_t>>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i)
    out << (i ? "," : "") << "[" << values[i].first << "," << values[i].second << "]";
  return out.str() + "]";
}

// "" when `actual` equals the golden's ids, type_ids, attention_mask, special_tokens_mask and offsets
// (those present in it); else which field differs, at which index, and both values in full.
inline std::string encoding_difference(const berth::tokenizer::Encoding& actual,
                                       const nlohmann::json& golden) {
  const auto compare = [&](const char* field, const std::vector<int64_t>& got) -> std::string {
    if (!golden.contains(field)) return "";
    auto want = golden[field].get<std::vector<int64_t>>();
    if (want == got) return "";
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    return std::string(field) + " differ first at index " + std::to_string(i) + "\n  berth: " + show(got) +
           "\n  HF:    " + show(want);
  };
  for (auto [field, got] : {std::pair<const char*, const std::vector<int64_t>*>{"ids", &actual.ids},
                            {"type_ids", &actual.type_ids},
                            {"attention_mask", &actual.attention_mask},
                            {"special_tokens_mask", &actual.special_tokens_mask},
                            {"word_ids", &actual.word_ids}}) {
    std::string diff = compare(field, *got);
    if (!diff.empty()) return diff;
  }
  if (golden.contains("offsets")) {
    std::vector<std::pair<size_t, size_t>> want;
    const auto& offsets = golden["offsets"];
    if (!offsets.empty() && offsets[0].is_array()) {
      for (const auto& o : offsets) want.emplace_back(o[0].get<size_t>(), o[1].get<size_t>());
    } else {  // flattened: [s0, e0, s1, e1, ...]
      for (size_t i = 0; i + 1 < offsets.size(); i += 2)
        want.emplace_back(offsets[i].get<size_t>(), offsets[i + 1].get<size_t>());
    }
    if (want != actual.offsets) {
      size_t i = 0;
      while (i < want.size() && i < actual.offsets.size() && want[i] == actual.offsets[i]) ++i;
      return "offsets differ first at index " + std::to_string(i) + "\n  berth: " + show(actual.offsets) +
             "\n  HF:    " + show(want);
    }
  }
  return "";
}

}  // namespace berth::testing
