// HF tokenizer files: the subset of tokenizer.json that describes a BERT WordPiece tokenizer, vocab.txt and
// tokenizer_config.json.
#include "berth/tokenizer/tokenizer_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"

namespace berth::tokenizer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in, "cannot open ", path.string(), ". Fix: check the path and its permissions");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return json::parse(buffer.str());
  } catch (const json::parse_error& e) {
    BERTH_FAIL(path.string(), ": not valid JSON (", e.what(), "). Fix: repair or regenerate the file");
  }
}

// Reads a field with the type T, naming the file and field when it has another type.
template <typename T>
T get(const json& object, const char* key, const std::string& where, T fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    BERTH_FAIL(where, ": field '", key, "' has the wrong type (found ", it->dump(),
               "). Fix: see HF's format");
  }
}

// A special token in tokenizer_config.json: "[CLS]" or {"content": "[CLS]", ...} (AddedToken form).
void read_special_token(const json& config, const char* key, const std::string& where, std::string& out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return;
  if (it->is_string()) {
    out = it->get<std::string>();
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    out = (*it)["content"].get<std::string>();
  } else {
    BERTH_FAIL(where, ": ", key, " must be a string or an object with \"content\", found ", it->dump());
  }
}

struct Config {
  std::optional<bool> do_lower_case;
  std::optional<std::optional<bool>> strip_accents;  // present (possibly null) or absent
  std::optional<bool> tokenize_chinese_chars;
  std::optional<size_t> model_max_length;
  SpecialTokenTexts special_tokens;
};

Config read_config(const fs::path& path) {
  Config config;
  if (!fs::exists(path)) return config;
  const std::string where = path.string();
  json j = read_json(path);
  BERTH_CHECK(j.is_object(), where, ": expected a JSON object, found ", j.type_name());
  if (j.contains("do_lower_case")) config.do_lower_case = get<bool>(j, "do_lower_case", where, true);
  if (j.contains("strip_accents"))
    config.strip_accents = j["strip_accents"].is_null()
                               ? std::optional<bool>()
                               : std::optional<bool>(get<bool>(j, "strip_accents", where, false));
  if (j.contains("tokenize_chinese_chars"))
    config.tokenize_chinese_chars = get<bool>(j, "tokenize_chinese_chars", where, true);
  if (j.contains("model_max_length") && !j["model_max_length"].is_null()) {
    BERTH_CHECK(j["model_max_length"].is_number() && j["model_max_length"].get<double>() >= 0, where,
                ": model_max_length must be a non-negative number, found ", j["model_max_length"].dump());
    double value = j["model_max_length"].get<double>();
    // transformers writes 1e30 (VERY_LARGE_INTEGER) for "no limit".
    if (value < 1e18) config.model_max_length = static_cast<size_t>(value);
  }
  read_special_token(j, "unk_token", where, config.special_tokens.unk);
  read_special_token(j, "sep_token", where, config.special_tokens.sep);
  read_special_token(j, "pad_token", where, config.special_tokens.pad);
  read_special_token(j, "cls_token", where, config.special_tokens.cls);
  read_special_token(j, "mask_token", where, config.special_tokens.mask);
  return config;
}

// The "type" of a tokenizer.json section, refusing the ones berth does not implement.
std::string section_type(const json& tokenizer, const char* section, const std::string& where,
                         std::initializer_list<const char*> supported) {
  std::string list;
  for (const char* s : supported) list += std::string(list.empty() ? "" : " or ") + s;
  auto it = tokenizer.find(section);
  BERTH_CHECK(it != tokenizer.end() && it->is_object(), where, ": the ", section,
              " is missing or null; berth's WordPiece tokenizer needs ", list,
              ". Fix: use a BERT tokenizer.json (or only vocab.txt + tokenizer_config.json)");
  std::string type = get<std::string>(*it, "type", where, "");
  for (const char* s : supported)
    if (type == s) return type;
  BERTH_FAIL(where, ": ", section, " type '", type, "' is not supported: berth implements ", list,
             " (BERT's WordPiece tokenizer). Fix: use a BERT-style tokenizer, or only vocab.txt + ",
             "tokenizer_config.json");
}

TruncationStrategy parse_strategy(const std::string& text, const std::string& where) {
  if (text == "LongestFirst" || text == "longest_first") return TruncationStrategy::LongestFirst;
  if (text == "OnlyFirst" || text == "only_first") return TruncationStrategy::OnlyFirst;
  if (text == "OnlySecond" || text == "only_second") return TruncationStrategy::OnlySecond;
  BERTH_FAIL(where, ": truncation strategy '", text,
             "' is unknown; expected LongestFirst, OnlyFirst or OnlySecond");
}

Side parse_side(const json& section, const std::string& where) {
  std::string text = get<std::string>(section, "direction", where, "Right");
  if (text == "Right" || text == "right") return Side::Right;
  if (text == "Left" || text == "left") return Side::Left;
  BERTH_FAIL(where, ": direction '", text, "' is unknown; expected Left or Right");
}

// model: WordPiece with its vocabulary; HF's own files may leave out its "type" (serde then tells the models
// apart by their fields).
WordPiece read_wordpiece_model(json& j, const std::string& where, WordPieceOptions& options) {
  BERTH_CHECK(j.contains("model") && j["model"].is_object(), where,
              ": the model is missing. Fix: use a BERT ",
              "tokenizer.json (or only vocab.txt + tokenizer_config.json)");
  if (!j["model"].contains("type") && j["model"].contains("max_input_chars_per_word"))
    j["model"]["type"] = "WordPiece";
  section_type(j, "model", where, {"WordPiece"});
  const json& m = j["model"];
  options.unk_token = get<std::string>(m, "unk_token", where, options.unk_token);
  options.continuing_subword_prefix =
      get<std::string>(m, "continuing_subword_prefix", where, options.continuing_subword_prefix);
  options.max_input_chars_per_word =
      get<size_t>(m, "max_input_chars_per_word", where, options.max_input_chars_per_word);
  BERTH_CHECK(m.contains("vocab") && m["vocab"].is_object(), where,
              ": model.vocab must be an object {token: id}. Fix: regenerate tokenizer.json");
  const json& vocab = m["vocab"];
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> filled(vocab.size(), false);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    BERTH_CHECK(it.value().is_number_unsigned(), where, ": model.vocab['", it.key(),
                "'] must be a non-negative integer id, found ", it.value().dump());
    size_t id = it.value().get<size_t>();
    BERTH_CHECK(id < tokens.size(), where, ": model.vocab['", it.key(), "'] has id ", id, " but the ",
                tokens.size(), " tokens must have ids 0..", tokens.size() - 1,
                ". Fix: renumber the vocabulary");
    BERTH_CHECK(!filled[id], where, ": id ", id, " is given to both '", tokens[id], "' and '", it.key(),
                "' in model.vocab. Fix: give each token its own id");
    tokens[id] = it.key();
    filled[id] = true;
  }
  return WordPiece(std::move(tokens), options, where + " (model.vocab)");
}

// normalizer, with tokenizer_config.json's settings taking precedence as in transformers.
BertNormalizerOptions read_normalizer(json& j, const std::string& where, const Config& config) {
  section_type(j, "normalizer", where, {"BertNormalizer"});
  const json& n = j["normalizer"];
  BertNormalizerOptions normalizer;
  normalizer.clean_text = get<bool>(n, "clean_text", where, true);
  normalizer.handle_chinese_chars = get<bool>(n, "handle_chinese_chars", where, true);
  if (n.contains("strip_accents") && !n["strip_accents"].is_null())
    normalizer.strip_accents = get<bool>(n, "strip_accents", where, false);
  normalizer.lowercase = get<bool>(n, "lowercase", where, true);
  if (config.do_lower_case) normalizer.lowercase = *config.do_lower_case;
  if (config.strip_accents) normalizer.strip_accents = *config.strip_accents;
  if (config.tokenize_chinese_chars) normalizer.handle_chinese_chars = *config.tokenize_chinese_chars;

  return normalizer;
}

TemplateProcessing read_post_processor(json& j, const std::string& where) {
  std::string post_type = section_type(j, "post_processor", where, {"TemplateProcessing", "BertProcessing"});
  const json& p = j["post_processor"];
  TemplateProcessing post;
  if (post_type == "BertProcessing") {
    BERTH_CHECK(p.contains("cls") && p["cls"].is_array() && p["cls"].size() == 2 && p.contains("sep") &&
                    p["sep"].is_array() && p["sep"].size() == 2,
                where, ": BertProcessing needs \"cls\": [token, id] and \"sep\": [token, id]");
    post = TemplateProcessing::bert(p["cls"][0].get<std::string>(), p["cls"][1].get<int64_t>(),
                                    p["sep"][0].get<std::string>(), p["sep"][1].get<int64_t>());
  } else {
    const auto pieces = [&](const char* key) {
      std::vector<TemplatePiece> out;
      BERTH_CHECK(p.contains(key) && p[key].is_array(), where, ": TemplateProcessing needs a \"", key,
                  "\" list");
      for (const json& item : p[key]) {
        TemplatePiece piece;
        if (item.contains("Sequence")) {
          std::string id = get<std::string>(item["Sequence"], "id", where, "A");
          BERTH_CHECK(id == "A" || id == "B", where, ": template sequence '", id, "' must be A or B");
          piece.kind = TemplatePiece::Kind::Sequence;
          piece.sequence = id == "A" ? 0 : 1;
          piece.type_id = get<int64_t>(item["Sequence"], "type_id", where, 0);
        } else if (item.contains("SpecialToken")) {
          piece.kind = TemplatePiece::Kind::SpecialToken;
          piece.special_token = get<std::string>(item["SpecialToken"], "id", where, "");
          piece.type_id = get<int64_t>(item["SpecialToken"], "type_id", where, 0);
        } else {
          BERTH_FAIL(where, ": template item ", item.dump(), " is neither a Sequence nor a SpecialToken");
        }
        out.push_back(piece);
      }
      return out;
    };
    post.single = pieces("single");
    post.pair = pieces("pair");
    if (p.contains("special_tokens") && p["special_tokens"].is_object()) {
      for (auto it = p["special_tokens"].begin(); it != p["special_tokens"].end(); ++it) {
        TemplateSpecialToken token;
        token.name = get<std::string>(it.value(), "id", where, it.key());
        token.ids = get<std::vector<int64_t>>(it.value(), "ids", where, {});
        token.tokens = get<std::vector<std::string>>(it.value(), "tokens", where, {});
        post.special_tokens.push_back(std::move(token));
      }
    }
  }

  return post;
}

// added tokens: matched verbatim in the raw text.
std::vector<AddedToken> read_added_tokens(json& j, const std::string& where) {
  std::vector<AddedToken> added;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const json& t : j["added_tokens"]) {
      std::string content = get<std::string>(t, "content", where, "");
      for (const char* flag : {"single_word", "lstrip", "rstrip", "normalized"}) {
        BERTH_CHECK(
            !get<bool>(t, flag, where, false), where, ": added token '", content, "' sets ", flag,
            "=true, which berth does not implement (only tokens matched verbatim in the raw text, as ",
            "BERT's special tokens are). Fix: set it to false or remove the token");
      }
      added.push_back({content, get<int64_t>(t, "id", where, 0), get<bool>(t, "special", where, true)});
    }
  }

  return added;
}

void read_truncation_and_padding(json& j, const std::string& where, WordPieceTokenizer& tokenizer) {
  if (j.contains("truncation") && j["truncation"].is_object()) {
    const json& t = j["truncation"];
    TruncationOptions truncation;
    truncation.max_length = get<size_t>(t, "max_length", where, truncation.max_length);
    truncation.strategy = parse_strategy(get<std::string>(t, "strategy", where, "LongestFirst"), where);
    truncation.direction = parse_side(t, where);
    truncation.stride = get<size_t>(t, "stride", where, 0);
    tokenizer.set_truncation(truncation);
  }
  if (j.contains("padding") && j["padding"].is_object()) {
    const json& pad = j["padding"];
    PaddingOptions padding;
    if (pad.contains("strategy") && pad["strategy"].is_object() && pad["strategy"].contains("Fixed")) {
      padding.strategy = PaddingStrategy::MaxLength;
      padding.max_length = pad["strategy"]["Fixed"].get<size_t>();
    }
    padding.direction = parse_side(pad, where);
    padding.pad_to_multiple_of = get<size_t>(pad, "pad_to_multiple_of", where, 0);
    padding.pad_id = get<int64_t>(pad, "pad_id", where, 0);
    padding.pad_type_id = get<int64_t>(pad, "pad_type_id", where, 0);
    padding.pad_token = get<std::string>(pad, "pad_token", where, "[PAD]");
    tokenizer.set_padding(padding);
  }
}

WordPieceTokenizer load_tokenizer_json(const fs::path& path, const Config& config) {
  const std::string where = path.string();
  json j = read_json(path);
  BERTH_CHECK(j.is_object(), where, ": expected a JSON object, found ", j.type_name());
  WordPieceOptions options;
  WordPiece model = read_wordpiece_model(j, where, options);
  const BertNormalizerOptions normalizer = read_normalizer(j, where, config);
  section_type(j, "pre_tokenizer", where, {"BertPreTokenizer"});
  TemplateProcessing post = read_post_processor(j, where);
  std::vector<AddedToken> added = read_added_tokens(j, where);
  SpecialTokenTexts special = config.special_tokens;
  special.unk = options.unk_token;
  WordPieceTokenizer tokenizer(BertNormalizer(normalizer), std::move(model), std::move(post),
                               std::move(added), special);
  read_truncation_and_padding(j, where, tokenizer);
  return tokenizer;
}

json side_json(Side side) { return side == Side::Left ? "Left" : "Right"; }

}  // namespace

WordPieceTokenizer load_tokenizer(const std::string& dir) {
  const fs::path root(dir);
  BERTH_CHECK(fs::is_directory(root), "tokenizer directory ", dir,
              " does not exist. Fix: pass the directory that holds tokenizer.json or vocab.txt");
  Config config = read_config(root / "tokenizer_config.json");
  std::optional<WordPieceTokenizer> tokenizer;
  if (fs::exists(root / "tokenizer.json")) {
    tokenizer.emplace(load_tokenizer_json(root / "tokenizer.json", config));
  } else {
    BERTH_CHECK(
        fs::exists(root / "vocab.txt"), "tokenizer directory ", dir,
        " holds neither tokenizer.json nor vocab.txt. Fix: point at a HF tokenizer directory (e.g. one ",
        "saved by save_pretrained)");
    WordPieceOptions options;
    options.unk_token = config.special_tokens.unk;
    BertNormalizerOptions normalizer;
    normalizer.lowercase = config.do_lower_case.value_or(true);
    if (config.strip_accents) normalizer.strip_accents = *config.strip_accents;
    normalizer.handle_chinese_chars = config.tokenize_chinese_chars.value_or(true);
    tokenizer.emplace(WordPieceTokenizer::bert(WordPiece::from_file((root / "vocab.txt").string(), options),
                                               normalizer, config.special_tokens));
  }
  tokenizer->model_max_length = config.model_max_length;
  return std::move(*tokenizer);
}

bool is_bert_wordpiece_dir(const std::string& dir) {
  const fs::path path = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(path)) return true;
  const json j = read_json(path);
  const auto type_of = [&](const char* section) -> std::string {
    if (!j.is_object() || !j.contains(section) || !j[section].is_object()) return "";
    const json& part = j[section];
    return part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
  };
  const std::string normalizer = type_of("normalizer"), model = type_of("model");
  // Older files leave out the model's type; a WordPiece model has max_input_chars_per_word.
  const bool wordpiece = model == "WordPiece" || (model.empty() && j["model"].is_object() &&
                                                  j["model"].contains("max_input_chars_per_word"));
  return wordpiece && (normalizer.empty() || normalizer == "BertNormalizer") &&
         type_of("pre_tokenizer") == "BertPreTokenizer";
}

Tokenizer load_pipeline_tokenizer(const std::string& dir) {
  const fs::path root(dir);
  BERTH_CHECK(
      fs::exists(root / "tokenizer.json"), "tokenizer directory ", dir,
      " has no tokenizer.json. Fix: point at a HF tokenizer directory (e.g. one saved by save_pretrained)");
  Tokenizer tokenizer = Tokenizer::from_file((root / "tokenizer.json").string());
  const fs::path config_path = root / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    tokenizer.model_max_length = read_config(config_path).model_max_length;
    const json config = read_json(config_path);
    std::string pad;
    read_special_token(config, "pad_token", config_path.string(), pad);
    if (!pad.empty()) tokenizer.pad_token = pad;
  }
  return tokenizer;
}

namespace {

json added_tokens_json(const WordPieceTokenizer& tokenizer) {
  json added = json::array();
  for (const AddedToken& t : tokenizer.added_tokens()) {
    added.push_back({{"id", t.id},
                     {"content", t.content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", t.special}});
  }
  // HF lists added tokens by id.
  std::sort(added.begin(), added.end(),
            [](const json& a, const json& b) { return a["id"].get<int64_t>() < b["id"].get<int64_t>(); });

  return added;
}

json truncation_json(const WordPieceTokenizer& tokenizer) {
  json truncation = nullptr;
  if (const auto& t = tokenizer.truncation()) {
    const char* strategy = t->strategy == TruncationStrategy::LongestFirst ? "LongestFirst"
                           : t->strategy == TruncationStrategy::OnlyFirst  ? "OnlyFirst"
                                                                           : "OnlySecond";
    truncation = {{"direction", side_json(t->direction)},
                  {"max_length", t->max_length},
                  {"strategy", strategy},
                  {"stride", t->stride}};
  }
  return truncation;
}

json padding_json(const WordPieceTokenizer& tokenizer) {
  json padding = nullptr;
  if (const auto& p = tokenizer.padding()) {
    padding = {{"strategy", p->strategy == PaddingStrategy::Longest ? json("BatchLongest")
                                                                    : json({{"Fixed", p->max_length}})},
               {"direction", side_json(p->direction)},
               {"pad_to_multiple_of", p->pad_to_multiple_of ? json(p->pad_to_multiple_of) : json(nullptr)},
               {"pad_id", p->pad_id},
               {"pad_type_id", p->pad_type_id},
               {"pad_token", p->pad_token}};
  }
  return padding;
}

}  // namespace

void save_tokenizer(const WordPieceTokenizer& tokenizer, const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  fs::create_directories(root, error);
  BERTH_CHECK(!error, "cannot create the tokenizer directory ", dir, ": ", error.message());

  const WordPiece& model = tokenizer.model();
  std::string vocab;
  for (const std::string& token : model.tokens()) vocab += token + "\n";

  const BertNormalizerOptions& n = tokenizer.normalizer().options();
  const SpecialTokenTexts& special = tokenizer.special_tokens();
  json config = {{"tokenizer_class", "BertTokenizer"},
                 {"do_lower_case", n.lowercase},
                 {"strip_accents", n.strip_accents ? json(*n.strip_accents) : json(nullptr)},
                 {"tokenize_chinese_chars", n.handle_chinese_chars},
                 {"unk_token", special.unk},
                 {"sep_token", special.sep},
                 {"pad_token", special.pad},
                 {"cls_token", special.cls},
                 {"mask_token", special.mask}};
  if (tokenizer.model_max_length) config["model_max_length"] = *tokenizer.model_max_length;

  const json added = added_tokens_json(tokenizer);

  const auto template_json = [](const std::vector<TemplatePiece>& pieces) {
    json out = json::array();
    for (const TemplatePiece& piece : pieces) {
      if (piece.kind == TemplatePiece::Kind::Sequence) {
        out.push_back({{"Sequence", {{"id", piece.sequence == 0 ? "A" : "B"}, {"type_id", piece.type_id}}}});
      } else {
        out.push_back({{"SpecialToken", {{"id", piece.special_token}, {"type_id", piece.type_id}}}});
      }
    }
    return out;
  };
  const TemplateProcessing& post = tokenizer.post_processor();
  json special_tokens = json::object();
  for (const TemplateSpecialToken& t : post.special_tokens)
    special_tokens[t.name] = {{"id", t.name}, {"ids", t.ids}, {"tokens", t.tokens}};

  const json truncation = truncation_json(tokenizer);
  const json padding = padding_json(tokenizer);

  json vocab_json = json::object();
  for (size_t i = 0; i < model.tokens().size(); ++i) vocab_json[model.tokens()[i]] = i;
  const WordPieceOptions& options = model.options();
  json tokenizer_json = {
      {"version", "1.0"},
      {"truncation", truncation},
      {"padding", padding},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", n.clean_text},
        {"handle_chinese_chars", n.handle_chinese_chars},
        {"strip_accents", n.strip_accents ? json(*n.strip_accents) : json(nullptr)},
        {"lowercase", n.lowercase}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", template_json(post.single)},
        {"pair", template_json(post.pair)},
        {"special_tokens", special_tokens}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", options.continuing_subword_prefix}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", options.unk_token},
        {"continuing_subword_prefix", options.continuing_subword_prefix},
        {"max_input_chars_per_word", options.max_input_chars_per_word},
        {"vocab", vocab_json}}}};

  write_file_atomically(root / "vocab.txt", vocab);
  write_file_atomically(root / "tokenizer_config.json", config.dump(2) + "\n");
  write_file_atomically(root / "tokenizer.json", tokenizer_json.dump(2) + "\n");
}

}  // namespace berth::tokenizer
