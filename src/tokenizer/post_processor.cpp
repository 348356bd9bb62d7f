// The post-processors of tokenizer.json, as HF's process_encodings applies them to the encodings of one
// sequence or a pair; post_process concatenates the result as HF's Encoding::merge does.
#include "berth/tokenizer/post_processor.h"

#include <unordered_map>

#include "berth/tokenizer/pre_tokenizer.h"
#include "encoding_ops.h"
#include "json_fields.h"
#include "pipeline_json.h"
#include "unicode_props.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

void reserve(Encoding& e, size_t size) {
  e.ids.reserve(size), e.type_ids.reserve(size), e.attention_mask.reserve(size);
  e.special_tokens_mask.reserve(size), e.offsets.reserve(size), e.sequence_ids.reserve(size);
}

// before, e, after concatenated as HF's merge does (e's overflowing windows each wrapped the same way).
Encoding wrap(const std::vector<int64_t>& before, Encoding e, const std::vector<int64_t>& after,
              int64_t type_id) {
  Encoding out = special_encoding(before, type_id);
  merge_encodings(out, std::move(e));
  merge_encodings(out, special_encoding(after, type_id));
  return out;
}

// How many spaces (Ġ or whitespace) each token starts and ends with, by id: read once from the token texts.
using SpaceCounts = std::vector<std::pair<uint16_t, uint16_t>>;

SpaceCounts space_counts(const TokenText& token_text, size_t ids) {
  const char32_t space = byte_char(' ');
  const auto is_space = [&](char32_t c) {
    return c == space || (unicode::classes_of(c) & unicode::kWhitespace);
  };
  SpaceCounts out(ids);
  std::u32string chars;
  for (size_t id = 0; id < ids; ++id) {
    const std::string token = token_text(static_cast<int64_t>(id));
    chars.clear();
    for (size_t pos = 0; pos < token.size();) chars.push_back(utf8::decode_valid(token.data(), pos));
    size_t leading = 0, trailing = 0;
    while (leading < chars.size() && is_space(chars[leading])) ++leading;
    while (trailing < chars.size() && is_space(chars[chars.size() - 1 - trailing])) ++trailing;
    out[id] = {static_cast<uint16_t>(std::min<size_t>(leading, 0xFFFF)),
               static_cast<uint16_t>(std::min<size_t>(trailing, 0xFFFF))};
  }
  return out;
}

// HF's byte-level process_offsets: leading and trailing spaces (Ġ or whitespace) leave each token's offsets,
// except the one space add_prefix_space put before the first token.
void trim_offsets(Encoding& e, bool add_prefix_space, const SpaceCounts& spaces) {
  for (size_t i = 0; i < e.ids.size(); ++i) {
    const auto id = static_cast<size_t>(e.ids[i]);
    size_t leading = id < spaces.size() ? spaces[id].first : 0;
    const size_t trailing = id < spaces.size() ? spaces[id].second : 0;
    auto& [begin, end] = e.offsets[i];
    if (leading > 0) {
      const bool first = i == 0 || begin == 0;
      if (first && add_prefix_space && leading == 1) leading = 0;
      begin = std::min(begin + leading, end);
    }
    if (trailing > 0 && end >= trailing) end = std::max(end - trailing, begin);
  }
}

// trim_offsets on e and each of its overflowing windows.
void trim_with_windows(Encoding& e, bool add_prefix_space, const SpaceCounts& spaces) {
  trim_offsets(e, add_prefix_space, spaces);
  for (Encoding& o : e.overflowing) trim_offsets(o, add_prefix_space, spaces);
}

class ByteLevelProcessor : public PostProcessor {
 public:
  ByteLevelProcessor(bool trim, bool add_prefix_space, const TokenText& token_text, size_t ids)
      : trim_(trim),
        add_prefix_space_(add_prefix_space),
        spaces_(trim ? space_counts(token_text, ids) : SpaceCounts()) {}
  size_t added_tokens(bool) const override { return 0; }
  void process_encodings(std::vector<Encoding>& encodings, bool) const override {
    if (trim_)
      for (Encoding& e : encodings) trim_with_windows(e, add_prefix_space_, spaces_);
  }

 private:
  bool trim_, add_prefix_space_;
  SpaceCounts spaces_;
};

// BertProcessing ([CLS] A [SEP] B [SEP]) and RobertaProcessing (<s> A </s> </s> B </s>, offsets trimmed).
class ClsSepProcessor : public PostProcessor {
 public:
  ClsSepProcessor(int64_t cls, int64_t sep, bool roberta, bool trim, bool add_prefix_space,
                  const TokenText& token_text, size_t ids)
      : cls_(cls),
        sep_(sep),
        roberta_(roberta),
        trim_(trim),
        add_prefix_space_(add_prefix_space),
        spaces_(roberta && trim ? space_counts(token_text, ids) : SpaceCounts()) {}
  size_t added_tokens(bool pair) const override { return pair ? (roberta_ ? 4 : 3) : 2; }
  void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const override {
    if (roberta_ && trim_)
      for (Encoding& e : encodings) trim_with_windows(e, add_prefix_space_, spaces_);
    if (roberta_)  // RoBERTa has no second segment, with or without its special tokens
      for (Encoding& e : encodings) e.type_ids.assign(e.ids.size(), 0);
    if (!add_special_tokens) return;
    for (size_t i = 0; i < encodings.size(); ++i) {
      Encoding& e = encodings[i];
      if (roberta_)  // and its windows too, once they get special tokens
        for (Encoding& o : e.overflowing) o.type_ids.assign(o.ids.size(), 0);
      const int64_t type = roberta_ || i == 0 ? 0 : 1;
      std::vector<int64_t> before;
      if (i == 0) before = {cls_};
      if (i > 0 && roberta_) before = {sep_};
      e = wrap(before, std::move(e), {sep_}, type);
    }
  }

 private:
  int64_t cls_, sep_;
  bool roberta_, trim_, add_prefix_space_;
  SpaceCounts spaces_;
};

struct TemplatePart {
  int sequence = -1;  // 0: $A, 1: $B, -1: a special token
  std::vector<int64_t> ids;
  int64_t type_id = 0;
};

class TemplateProcessor : public PostProcessor {
 public:
  TemplateProcessor(std::vector<TemplatePart> single, std::vector<TemplatePart> pair)
      : single_(std::move(single)), pair_(std::move(pair)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const TemplatePart& p : pair ? pair_ : single_) n += p.ids.size();
    return n;
  }
  void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const override {
    std::vector<Encoding> out;
    for (const TemplatePart& p : encodings.size() > 1 ? pair_ : single_) {
      if (p.sequence < 0) {
        if (add_special_tokens) out.push_back(special_encoding(p.ids, p.type_id));
        continue;
      }
      BERTH_BUG(static_cast<size_t>(p.sequence) < encodings.size(), "a template names a missing sequence");
      Encoding e = encodings[static_cast<size_t>(p.sequence)];
      e.type_ids.assign(e.ids.size(), p.type_id);  // HF leaves the overflowing windows' type ids alone
      set_sequence_id(e, static_cast<int8_t>(p.sequence));
      out.push_back(std::move(e));
    }
    encodings = std::move(out);
  }

 private:
  std::vector<TemplatePart> single_, pair_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const auto& s : steps_) n += s->added_tokens(pair);
    return n;
  }
  void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const override {
    for (const auto& s : steps_) s->process_encodings(encodings, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// A template: ["[CLS]", "$A", ...] strings, or HF's {"SpecialToken": ...} / {"Sequence": ...} objects.
std::vector<TemplatePart> parse_template(
    const JsonFields& fields, const char* key,
    const std::unordered_map<std::string, std::vector<int64_t>>& specials) {
  const nlohmann::json& list = fields.raw(key);
  BERTH_CHECK(list.is_array(), fields.at(key), ": expected a list of template pieces, found ",
              list.type_name());
  std::vector<TemplatePart> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonFields piece(list[i], fields.at(key) + "[" + std::to_string(i) + "]");
    TemplatePart part;
    if (piece.has("Sequence")) {
      const JsonFields seq(piece.raw("Sequence"), piece.at("Sequence"));
      const std::string id = seq.required<std::string>("id");
      BERTH_CHECK(id == "A" || id == "B", seq.at("id"), ": \"", id,
                  "\" is not a sequence; templates name A or B");
      part.sequence = id == "A" ? 0 : 1;
      part.type_id = seq.get<int64_t>("type_id", 0);
    } else {
      const JsonFields tok(piece.raw("SpecialToken"), piece.at("SpecialToken"));
      const std::string id = tok.required<std::string>("id");
      const auto found = specials.find(id);
      BERTH_CHECK(found != specials.end(), tok.at("id"), ": \"", id,
                  "\" is not among the template's special_tokens. Fix: add it there with its ids");
      part.ids = found->second;
      part.type_id = tok.get<int64_t>("type_id", 0);
    }
    out.push_back(std::move(part));
  }
  return out;
}

std::unique_ptr<PostProcessor> parse_template_processing(const JsonFields& fields) {
  std::unordered_map<std::string, std::vector<int64_t>> specials;
  if (fields.has("special_tokens")) {
    for (const auto& [name, value] : fields.raw("special_tokens").items()) {
      const JsonFields token(value, fields.at("special_tokens") + "." + name);
      specials[name] = token.required<std::vector<int64_t>>("ids");
    }
  }
  return std::make_unique<TemplateProcessor>(parse_template(fields, "single", specials),
                                             parse_template(fields, "pair", specials));
}

// BertProcessing's "cls": ["[CLS]", 101].
int64_t token_pair_id(const JsonFields& fields, const char* key) {
  const nlohmann::json& pair = fields.raw(key);
  BERTH_CHECK(pair.is_array() && pair.size() == 2 && pair[1].is_number_integer(), fields.at(key),
              ": expected [\"token\", id], found ", pair.dump().substr(0, 80));
  return pair[1].get<int64_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> parse_post_processor(const nlohmann::json& json, const std::string& path,
                                                    const TokenText& token_text, size_t ids) {
  if (json.is_null()) return nullptr;
  const JsonFields fields(json, path);
  const std::string type = fields.type("post-processor", {"TemplateProcessing", "BertProcessing",
                                                          "RobertaProcessing", "ByteLevel", "Sequence"});
  if (type == "Sequence")
    return std::make_unique<SequenceProcessor>(parse_steps<PostProcessor>(
        fields, "processors", [&](const nlohmann::json& step, const std::string& at) {
          return parse_post_processor(step, at, token_text, ids);
        }));
  if (type == "TemplateProcessing") return parse_template_processing(fields);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelProcessor>(fields.get<bool>("trim_offsets", true),
                                                fields.get<bool>("add_prefix_space", true), token_text, ids);
  const bool roberta = type == "RobertaProcessing";
  return std::make_unique<ClsSepProcessor>(token_pair_id(fields, "cls"), token_pair_id(fields, "sep"),
                                           roberta, fields.get<bool>("trim_offsets", true),
                                           fields.get<bool>("add_prefix_space", true), token_text, ids);
}

Encoding post_process(const PostProcessor* processor, Encoding first, std::optional<Encoding> second,
                      bool add_special_tokens) {
  std::vector<Encoding> encodings;
  encodings.push_back(std::move(first));
  if (second) encodings.push_back(std::move(*second));
  if (!processor && encodings.size() == 1) return std::move(encodings.front());
  for (size_t i = 0; i < encodings.size(); ++i) {
    set_sequence_id(encodings[i], static_cast<int8_t>(i));
    if (processor) encodings[i].type_ids.assign(encodings[i].ids.size(), static_cast<int64_t>(i));
  }
  if (processor) processor->process_encodings(encodings, add_special_tokens);
  if (encodings.size() == 1) return std::move(encodings.front());
  Encoding out = std::move(encodings.front());
  size_t total = 0;
  for (const Encoding& e : encodings) total += e.size();
  reserve(out, total);
  for (size_t i = 1; i < encodings.size(); ++i) merge_encodings(out, std::move(encodings[i]));
  return out;
}

}  // namespace berth::tokenizer
