// tokenizer.json's "model": BPE, WordPiece and WordLevel behind one interface.
#include "berth/tokenizer/token_model.h"

#include <unordered_map>

#include "berth/tokenizer/bpe.h"
#include "berth/tokenizer/wordpiece.h"
#include "json_fields.h"
#include "pipeline_json.h"
#include "tokenizer_json.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

using Vocab = std::vector<std::pair<std::string, int64_t>>;

// model.vocab, from the arrays the reader filled or from the JSON.
Vocab parse_vocab(const JsonFields& fields, ModelArrays& arrays) {
  if (arrays.vocab) return std::move(*arrays.vocab);
  const nlohmann::json& vocab = fields.raw("vocab");
  BERTH_CHECK(vocab.is_object(), fields.at("vocab"), ": expected an object of token -> id, found ",
              vocab.type_name());
  Vocab out;
  out.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    BERTH_CHECK(id.is_number_integer(), fields.at("vocab"), "[\"", token,
                "\"]: expected an integer id, found ", id.type_name());
    out.emplace_back(token, id.get<int64_t>());
  }
  return out;
}

// "a b" (the older format) or ["a", "b"].
Bpe::Merges parse_merges(const JsonFields& fields, ModelArrays& arrays) {
  if (arrays.merges) return std::move(*arrays.merges);
  Bpe::Merges out;
  if (!fields.has("merges")) return out;
  const nlohmann::json& merges = fields.raw("merges");
  BERTH_CHECK(merges.is_array(), fields.at("merges"), ": expected a list, found ", merges.type_name());
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const nlohmann::json& m = merges[i];
    const std::string where = fields.at("merges") + "[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string line = m.get<std::string>();
      const size_t space = line.find(' ');
      BERTH_CHECK(space != std::string::npos && line.find(' ', space + 1) == std::string::npos, where, ": \"",
                  line, "\" is not two tokens separated by one space");
      out.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else {
      BERTH_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), where,
                  ": expected [\"left\", \"right\"], found ", m.dump().substr(0, 80));
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  return out;
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// A whole piece is one token, or unk.
class WordLevel : public TokenModel {
 public:
  WordLevel(const Vocab& vocab, const std::string& unk, const std::string& where) : where_(where) {
    for (const auto& [token, id] : vocab) {
      vocab_[token] = id;
      if (id >= 0 && static_cast<size_t>(id) >= tokens_.size()) tokens_.resize(static_cast<size_t>(id) + 1);
      if (id >= 0) tokens_[static_cast<size_t>(id)] = token;
    }
    const auto found = vocab_.find(unk);
    if (found != vocab_.end()) unk_id_ = found->second;
  }
  void tokenize(std::string_view piece, std::vector<ModelToken>& out) const override {
    const auto found = vocab_.find(piece);
    BERTH_CHECK(found != vocab_.end() || unk_id_, where_, ": \"", piece,
                "\" is not in the WordLevel vocabulary and it has no unk_token. Fix: set unk_token");
    out.push_back({found != vocab_.end() ? found->second : *unk_id_, 0, static_cast<uint32_t>(piece.size())});
  }
  std::optional<int64_t> token_to_id(std::string_view token) const override {
    const auto found = vocab_.find(token);
    return found == vocab_.end() ? std::nullopt : std::optional<int64_t>(found->second);
  }
  std::string id_to_token(int64_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < tokens_.size() ? tokens_[static_cast<size_t>(id)] : "";
  }
  size_t vocab_size() const override { return tokens_.size(); }

 private:
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> vocab_;
  std::vector<std::string> tokens_;
  std::optional<int64_t> unk_id_;
  std::string where_;
};

// berth's WordPiece (exact to HF) over a piece.
class WordPieceModel : public TokenModel {
 public:
  explicit WordPieceModel(WordPiece model) : model_(std::move(model)) {}
  void tokenize(std::string_view piece, std::vector<ModelToken>& out) const override {
    thread_local std::vector<WordPiecePiece> pieces;
    pieces.clear();
    model_.tokenize(piece, utf8::count_chars(piece), pieces);
    for (const WordPiecePiece& p : pieces) out.push_back({p.id, p.begin, p.end});
  }
  std::optional<int64_t> token_to_id(std::string_view token) const override {
    const auto id = model_.token_to_id(token);
    return id ? std::optional<int64_t>(*id) : std::nullopt;
  }
  std::string id_to_token(int64_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < model_.size() ? model_.id_to_token(id) : "";
  }
  size_t vocab_size() const override { return model_.size(); }
  const WordPiece& wordpiece() const { return model_; }

 private:
  WordPiece model_;
};

std::unique_ptr<TokenModel> parse_wordpiece(const JsonFields& fields, ModelArrays& arrays) {
  std::unordered_map<std::string, int64_t> vocab;  // a token listed twice keeps its last id, as in HF
  for (auto& [token, id] : parse_vocab(fields, arrays)) vocab[std::move(token)] = id;
  std::vector<std::string> tokens(vocab.size());
  for (const auto& [token, id] : vocab) {
    BERTH_CHECK(id >= 0 && static_cast<size_t>(id) < tokens.size(), fields.at("vocab"), ": token ", token,
                " has id ", id, "; WordPiece ids must be 0..", tokens.size() - 1);
    tokens[static_cast<size_t>(id)] = token;
  }
  WordPieceOptions options;
  options.unk_token = fields.get<std::string>("unk_token", options.unk_token);
  options.continuing_subword_prefix = fields.get<std::string>("continuing_subword_prefix", "##");
  options.max_input_chars_per_word = fields.get<size_t>("max_input_chars_per_word", 100);
  return std::make_unique<WordPieceModel>(WordPiece(std::move(tokens), options, fields.at("vocab")));
}

std::string infer_type(const JsonFields& fields, const ModelArrays& arrays) {
  // HF writes "type"; older files leave it out and serde tells the models apart by their fields: BPE has
  // merges, WordPiece its word length limit, Unigram a list of scored pieces.
  if (arrays.merges || fields.has("merges")) return "BPE";
  if (fields.has("max_input_chars_per_word")) return "WordPiece";
  if (arrays.scores || (fields.has("vocab") && fields.raw("vocab").is_array())) return "Unigram";
  return "WordLevel";
}

}  // namespace

const WordPiece* as_wordpiece(const TokenModel& model) {
  const auto* wordpiece = dynamic_cast<const WordPieceModel*>(&model);
  return wordpiece ? &wordpiece->wordpiece() : nullptr;
}

std::unique_ptr<TokenModel> parse_token_model(const nlohmann::json& json, const std::string& path,
                                              ModelArrays arrays) {
  const JsonFields fields(json, path);
  const std::string type = fields.has("type")
                               ? fields.type("model", {"BPE", "Unigram", "WordPiece", "WordLevel"})
                               : infer_type(fields, arrays);
  if (type == "Unigram") return parse_unigram(fields, arrays);
  if (type == "WordPiece") return parse_wordpiece(fields, arrays);
  if (type == "WordLevel")
    return std::make_unique<WordLevel>(parse_vocab(fields, arrays),
                                       fields.get<std::string>("unk_token", "<unk>"), path);
  BERTH_CHECK(
      !fields.has("dropout") || fields.raw("dropout").get<double>() == 0.0, fields.at("dropout"),
      ": BPE dropout samples its merges at random; berth encodes deterministically. Fix: set it to null");
  BpeOptions options;
  if (fields.has("unk_token")) options.unk_token = fields.required<std::string>("unk_token");
  if (fields.has("continuing_subword_prefix"))
    options.continuing_subword_prefix = fields.required<std::string>("continuing_subword_prefix");
  if (fields.has("end_of_word_suffix"))
    options.end_of_word_suffix = fields.required<std::string>("end_of_word_suffix");
  options.fuse_unk = fields.get<bool>("fuse_unk", false);
  options.byte_fallback = fields.get<bool>("byte_fallback", false);
  options.ignore_merges = fields.get<bool>("ignore_merges", false);
  return std::make_unique<Bpe>(parse_vocab(fields, arrays), parse_merges(fields, arrays), options, path);
}

}  // namespace berth::tokenizer
