// The decoders of tokenizer.json, each one HF's decode_chain over the list of token texts.
#include "berth/tokenizer/decoder.h"

#include <unordered_map>

#include "berth/tokenizer/pre_tokenizer.h"
#include "json_fields.h"
#include "pipeline_json.h"
#include "regex.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  for (size_t pos = 0; pos < bytes.size();) {
    const auto lead = static_cast<unsigned char>(bytes[pos]);
    size_t length = lead < 0x80             ? 1
                    : (lead & 0xE0) == 0xC0 ? 2
                    : (lead & 0xF0) == 0xE0 ? 3
                    : (lead & 0xF8) == 0xF0 ? 4
                                            : 0;
    // The longest prefix of a valid sequence (Unicode's "maximal subpart"), by the second byte's allowed
    // range.
    size_t valid = 0;
    if (length == 1) {
      valid = 1;
    } else if (length > 1 && !(lead == 0xC0 || lead == 0xC1 || lead > 0xF4)) {
      unsigned char low = 0x80, high = 0xBF;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
      valid = 1;
      while (valid < length && pos + valid < bytes.size()) {
        const auto b = static_cast<unsigned char>(bytes[pos + valid]);
        if (valid == 1 ? (b < low || b > high) : (b & 0xC0) != 0x80) break;
        ++valid;
      }
    }
    if (length > 0 && valid == length) {
      out.append(bytes, pos, length);
      pos += length;
    } else {
      out += "\xEF\xBF\xBD";
      pos += std::max<size_t>(valid, 1);
    }
  }
  return out;
}

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// GPT-2's byte characters back to bytes, all tokens into one string (invalid UTF-8 -> U+FFFD).
class ByteLevelDecoder : public Decoder {
 public:
  ByteLevelDecoder() {
    for (int b = 0; b < 256; ++b) bytes_[byte_char(static_cast<unsigned char>(b))] = static_cast<char>(b);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string mapped;
      bool all = true;
      for (size_t pos = 0; pos < token.size() && all;) {
        const auto it = bytes_.find(utf8::decode_valid(token.data(), pos));
        all = it != bytes_.end();
        if (all) mapped.push_back(it->second);
      }
      bytes += all ? mapped : token;
    }
    tokens = {utf8_lossy(bytes)};
  }

 private:
  std::unordered_map<char32_t, char> bytes_;
};

// ▁ back to spaces; in the first token (when a prefix was prepended) every ▁ is dropped.
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool prepended) : replacement_(replacement), prepended_(prepended) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (char32_t c : utf8::to_u32(tokens[i])) {
        if (c != replacement_)
          utf8::append(out, c);
        else if (i > 0 || !prepended_)
          out.push_back(' ');
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  char32_t replacement_;
  bool prepended_;
};

// "##ing" joins the token before it, other tokens get a space; cleanup undoes BERT's spaces before
// punctuation.
class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      if (i > 0) token = token.rfind(prefix_, 0) == 0 ? token.substr(prefix_.size()) : " " + token;
      if (cleanup_) token = clean(token);
    }
  }

 private:
  static std::string clean(std::string text) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) {
      const std::string f(from), t(to);
      for (size_t at = text.find(f); at != std::string::npos; at = text.find(f, at + t.size()))
        text.replace(at, f.size(), t);
    }
    return text;
  }
  std::string prefix_;
  bool cleanup_;
};

// Runs of <0xXX> tokens become their bytes' text (or one U+FFFD per byte when they are not UTF-8).
class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t count = 0;
    const auto flush = [&] {
      if (count == 0) return;
      if (valid_utf8(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < count; ++i) out.push_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      count = 0;
    };
    for (std::string& token : tokens) {
      if (token.size() == 6 && token.rfind("<0x", 0) == 0 && token.back() == '>' && std::isxdigit(token[3]) &&
          std::isxdigit(token[4])) {
        bytes.push_back(static_cast<char>(std::stoi(token.substr(3, 2), nullptr, 16)));
        ++count;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static bool valid_utf8(const std::string& bytes) { return utf8_lossy(bytes) == bytes; }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens = {all};
  }
};

// Up to `start` leading and `stop` trailing `content` code points off each token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      const std::u32string chars = utf8::to_u32(token);
      size_t begin = 0, end = chars.size();
      while (begin < std::min(start_, chars.size()) && chars[begin] == content_) ++begin;
      for (size_t i = 0; i < stop_ && end > begin && chars[end - 1] == content_; ++i) --end;
      std::string out;
      for (size_t i = begin; i < end; ++i) utf8::append(out, chars[i]);
      token = std::move(out);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::string pattern, std::unique_ptr<Regex> regex, std::string content)
      : pattern_(std::move(pattern)), regex_(std::move(regex)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::vector<std::pair<size_t, size_t>> matches;
      if (regex_) {
        matches = regex_->find_all(std::string_view(token));
      } else if (!pattern_.empty()) {
        for (size_t at = token.find(pattern_); at != std::string::npos;
             at = token.find(pattern_, at + pattern_.size()))
          matches.emplace_back(at, at + pattern_.size());
      }
      std::string out;
      size_t last = 0;
      for (const auto& [b, e] : matches) {
        out.append(token, last, b - last);
        out += content_;
        last = e;
      }
      out.append(token, last, std::string::npos);
      token = std::move(out);
    }
  }

 private:
  std::string pattern_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

// The end-of-word suffix becomes a space, or nothing after the last token.
class BpeDecoder : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string with = i + 1 == tokens.size() ? "" : " ";
      std::string& t = tokens[i];
      for (size_t at = t.find(suffix_); !suffix_.empty() && at != std::string::npos;
           at = t.find(suffix_, at + with.size()))
        t.replace(at, suffix_.size(), with);
    }
  }

 private:
  std::string suffix_;
};

char32_t single_char(const JsonFields& fields, const char* key, const std::string& fallback) {
  const std::u32string chars = utf8::to_u32(fields.get<std::string>(key, fallback));
  BERTH_CHECK(chars.size() == 1, fields.at(key), ": expected one character, found ", chars.size());
  return chars[0];
}

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const nlohmann::json& json, const std::string& path) {
  if (json.is_null()) return nullptr;
  const JsonFields fields(json, path);
  const std::string type = fields.type("decoder", {"Sequence", "ByteLevel", "Metaspace", "WordPiece",
                                                   "ByteFallback", "Fuse", "Strip", "Replace", "BPEDecoder"});
  if (type == "Sequence")
    return std::make_unique<SequenceDecoder>(parse_steps<Decoder>(fields, "decoders", parse_decoder));
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    std::string scheme = fields.get<std::string>("prepend_scheme", "");
    if (scheme.empty()) scheme = fields.get<bool>("add_prefix_space", true) ? "always" : "never";
    return std::make_unique<MetaspaceDecoder>(single_char(fields, "replacement", "\u2581"),
                                              scheme != "never");
  }
  if (type == "WordPiece")
    return std::make_unique<WordPieceDecoder>(fields.get<std::string>("prefix", "##"),
                                              fields.get<bool>("cleanup", true));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(single_char(fields, "content", " "), fields.get<size_t>("start", 0),
                                          fields.get<size_t>("stop", 0));
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(fields.get<std::string>("suffix", "</w>"));
  const JsonFields pattern(fields.raw("pattern"), fields.at("pattern"));
  const std::string content = fields.required<std::string>("content");
  if (pattern.has("Regex"))
    return std::make_unique<ReplaceDecoder>(
        "", std::make_unique<Regex>(pattern.required<std::string>("Regex"), pattern.at("Regex")), content);
  return std::make_unique<ReplaceDecoder>(pattern.required<std::string>("String"), nullptr, content);
}

}  // namespace berth::tokenizer
