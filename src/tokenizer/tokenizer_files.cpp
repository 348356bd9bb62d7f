// HF tokenizer directories: tokenizer.json or vocab.txt, with tokenizer_config.json applied over it as
// transformers applies it; and writing one back.
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/core/input_file.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/tokenizer/wordpiece.h"
#include "tokenizer_json.h"

namespace berth::tokenizer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) { return read_input_file(path.string(), "tokenizer file"); }

// tokenizer_config.json, the parts berth applies.
struct Config {
  std::string text;  // the file as read; "" without one
  std::optional<bool> do_lower_case;
  std::optional<std::optional<bool>> strip_accents;  // present (possibly null) or absent
  std::optional<bool> tokenize_chinese_chars;
  std::optional<size_t> model_max_length;
  SpecialTokens special_tokens;
};

// Reads a field with the type T, naming the file and field when it has another type.
template <typename T>
std::optional<T> field(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    BERTH_FAIL(where, ": \"", key, "\" has the wrong type (found ", it->dump().substr(0, 80),
               "). Fix: see transformers' tokenizer_config.json");
  }
}

// A special token: "[CLS]" or {"content": "[CLS]", ...} (AddedToken form).
std::optional<std::string> special_token(const json& config, const char* key, const std::string& where) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  BERTH_CHECK(it->is_object() && it->contains("content") && (*it)["content"].is_string(), where, ": \"", key,
              "\" must be a string or an object with \"content\", found ", it->dump().substr(0, 80),
              ". Fix: write the token's text there");
  return (*it)["content"].get<std::string>();
}

Config read_config(const fs::path& path) {
  Config config;
  if (!fs::exists(path)) return config;
  const std::string where = path.string();
  config.text = read_text(path);
  json j;
  try {
    j = json::parse(config.text);
  } catch (const json::exception& e) {
    BERTH_FAIL(where, ": not valid JSON (", e.what(), "). Fix: repair or regenerate the file");
  }
  BERTH_CHECK(j.is_object(), where, ": expected a JSON object, found ", j.type_name());
  config.do_lower_case = field<bool>(j, "do_lower_case", where);
  if (j.contains("strip_accents")) config.strip_accents = field<bool>(j, "strip_accents", where);
  config.tokenize_chinese_chars = field<bool>(j, "tokenize_chinese_chars", where);
  if (const auto length = field<double>(j, "model_max_length", where)) {
    BERTH_CHECK(*length >= 0, where, ": model_max_length must not be negative, found ", *length);
    if (*length < 1e18) config.model_max_length = static_cast<size_t>(*length);  // 1e30: no limit
  }
  SpecialTokens& s = config.special_tokens;
  s.unk = special_token(j, "unk_token", where);
  s.sep = special_token(j, "sep_token", where);
  s.pad = special_token(j, "pad_token", where);
  s.cls = special_token(j, "cls_token", where);
  s.mask = special_token(j, "mask_token", where);
  s.bos = special_token(j, "bos_token", where);
  s.eos = special_token(j, "eos_token", where);
  return config;
}

// A vocab.txt as transformers' BertTokenizerFast builds it: BertNormalizer (with the config's settings),
// BertPreTokenizer, WordPiece, the special tokens added, "[CLS] $A [SEP]" and "... $B:1 [SEP]:1".
json bert_tokenizer_json(const fs::path& vocab_file, Config& config) {
  SpecialTokens& s = config.special_tokens;
  if (!s.unk) s.unk = "[UNK]";
  if (!s.sep) s.sep = "[SEP]";
  if (!s.pad) s.pad = "[PAD]";
  if (!s.cls) s.cls = "[CLS]";
  if (!s.mask) s.mask = "[MASK]";
  WordPieceOptions options;
  options.unk_token = *s.unk;
  const WordPiece wordpiece = WordPiece::from_file(vocab_file.string(), options);
  json vocab = json::object();
  for (size_t id = 0; id < wordpiece.size(); ++id)
    vocab[wordpiece.id_to_token(static_cast<int64_t>(id))] = id;
  json added = json::array();
  for (const std::string* token : {&*s.pad, &*s.unk, &*s.cls, &*s.sep, &*s.mask})
    if (const auto id = wordpiece.token_to_id(*token))
      added.push_back({{"id", *id},
                       {"content", *token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
  const auto id_of = [&](const std::string& token) {
    const auto id = wordpiece.token_to_id(token);
    BERTH_CHECK(
        id, vocab_file.string(), ": has no \"", token,
        "\", which BERT's template puts around every text. Fix: add it to the vocabulary, or name the "
        "vocabulary's own token in tokenizer_config.json (cls_token, sep_token)");
    return *id;
  };
  const auto piece = [](const char* kind, const std::string& id, int type) {
    return json{{kind, {{"id", id}, {"type_id", type}}}};
  };
  json post = {
      {"type", "TemplateProcessing"},
      {"single",
       {piece("SpecialToken", *s.cls, 0), piece("Sequence", "A", 0), piece("SpecialToken", *s.sep, 0)}},
      {"pair",
       {piece("SpecialToken", *s.cls, 0), piece("Sequence", "A", 0), piece("SpecialToken", *s.sep, 0),
        piece("Sequence", "B", 1), piece("SpecialToken", *s.sep, 1)}},
      {"special_tokens",
       {{*s.cls, {{"id", *s.cls}, {"ids", {id_of(*s.cls)}}, {"tokens", {*s.cls}}}},
        {*s.sep, {{"id", *s.sep}, {"ids", {id_of(*s.sep)}}, {"tokens", {*s.sep}}}}}}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", post},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", *s.unk},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab}}}};
}

// transformers' BertTokenizerFast: do_lower_case, strip_accents and tokenize_chinese_chars in
// tokenizer_config.json win over the BertNormalizer's own settings.
void apply_normalizer_settings(json& root, const Config& config) {
  if (!root.contains("normalizer") || !root["normalizer"].is_object() ||
      root["normalizer"].value("type", "") != "BertNormalizer")
    return;
  json& n = root["normalizer"];
  if (config.do_lower_case) n["lowercase"] = *config.do_lower_case;
  if (config.strip_accents)
    n["strip_accents"] = *config.strip_accents ? json(**config.strip_accents) : json();
  if (config.tokenize_chinese_chars) n["handle_chinese_chars"] = *config.tokenize_chinese_chars;
}

// BertTokenizerFast's defaults for the roles tokenizer_config.json leaves unset, where the vocabulary has
// the token.
void use_bert_defaults(Tokenizer& tokenizer) {
  SpecialTokens& s = tokenizer.special_tokens;
  for (auto [role, token] : {std::pair{&s.unk, "[UNK]"},
                             {&s.sep, "[SEP]"},
                             {&s.pad, "[PAD]"},
                             {&s.cls, "[CLS]"},
                             {&s.mask, "[MASK]"}})
    if (!*role && tokenizer.token_to_id(token)) *role = token;
}

// The tokenizer's truncation and padding as tokenizer.json's sections (HF's serialization).
nlohmann::ordered_json truncation_json(const std::optional<TruncationOptions>& t) {
  if (!t) return nullptr;
  const char* strategy = t->strategy == TruncationStrategy::LongestFirst ? "LongestFirst"
                         : t->strategy == TruncationStrategy::OnlyFirst  ? "OnlyFirst"
                                                                         : "OnlySecond";
  return {{"direction", t->direction == Side::Left ? "Left" : "Right"},
          {"max_length", t->max_length},
          {"strategy", strategy},
          {"stride", t->stride}};
}

nlohmann::ordered_json padding_json(const std::optional<PaddingOptions>& p) {
  if (!p) return nullptr;
  using ojson = nlohmann::ordered_json;
  return {{"strategy", p->strategy == PaddingStrategy::Longest ? ojson("BatchLongest")
                                                               : ojson({{"Fixed", p->max_length}})},
          {"direction", p->direction == Side::Left ? "Left" : "Right"},
          {"pad_to_multiple_of", p->pad_to_multiple_of ? ojson(p->pad_to_multiple_of) : ojson(nullptr)},
          {"pad_id", p->pad_id},
          {"pad_type_id", p->pad_type_id},
          {"pad_token", p->pad_token}};
}

}  // namespace

Tokenizer load_tokenizer(const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  BERTH_CHECK(fs::is_directory(root, error), "tokenizer directory ", dir,
              fs::exists(root, error) ? " is a file, not a directory" : " does not exist",
              ". Fix: pass the directory that holds tokenizer.json or vocab.txt");
  Config config = read_config(root / "tokenizer_config.json");
  TokenizerJson json_file;
  std::string text, source = (root / "tokenizer.json").string();
  if (fs::exists(root / "tokenizer.json")) {
    text = read_text(source);
    json_file = read_tokenizer_json(text, source);
  } else {
    BERTH_CHECK(
        fs::exists(root / "vocab.txt"), "tokenizer directory ", dir,
        " holds neither tokenizer.json nor vocab.txt. Fix: point at a HF tokenizer directory (e.g. one "
        "saved by save_pretrained)");
    json_file.root = bert_tokenizer_json(root / "vocab.txt", config);
    apply_normalizer_settings(json_file.root, config);
    text = json_file.root.dump(2) + "\n";  // what save_tokenizer writes: BERT's tokenizer.json, as built
    source = (root / "vocab.txt").string();
  }
  apply_normalizer_settings(json_file.root, config);
  Tokenizer tokenizer = Tokenizer::from_parsed(std::move(json_file), std::move(text), source);
  tokenizer.model_max_length = config.model_max_length;
  tokenizer.special_tokens = config.special_tokens;
  tokenizer.config_text = config.text;
  if (tokenizer.model_type() == "WordPiece") use_bert_defaults(tokenizer);
  return tokenizer;
}

void save_tokenizer(const Tokenizer& tokenizer, const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  fs::create_directories(root, error);
  BERTH_CHECK(!error, "cannot create the tokenizer directory ", dir, ": ", error.message(),
              ". Fix: choose a writable directory");
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (!tokenizer.config_text.empty()) config = nlohmann::ordered_json::parse(tokenizer.config_text);
  if (tokenizer.model_max_length) config["model_max_length"] = *tokenizer.model_max_length;
  const SpecialTokens& s = tokenizer.special_tokens;
  for (const auto& [key, token] : {std::pair{"unk_token", &s.unk},
                                   {"sep_token", &s.sep},
                                   {"pad_token", &s.pad},
                                   {"cls_token", &s.cls},
                                   {"mask_token", &s.mask},
                                   {"bos_token", &s.bos},
                                   {"eos_token", &s.eos}})
    if (*token) config[key] = **token;
  if (tokenizer.model_type() == "WordPiece") {
    std::string vocab;
    for (const std::string& token : tokenizer.model_tokens()) vocab += token + "\n";
    write_file_atomically((root / "vocab.txt").string(), vocab);
  }
  write_file_atomically((root / "tokenizer_config.json").string(), config.dump(2) + "\n");
  // tokenizer.json as read, with the truncation and padding the tokenizer has now (as HF saves them).
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(tokenizer.json_text());
  file["truncation"] = truncation_json(tokenizer.truncation());
  file["padding"] = padding_json(tokenizer.padding());
  write_file_atomically((root / "tokenizer.json").string(), file.dump(2) + "\n");
}

}  // namespace berth::tokenizer
