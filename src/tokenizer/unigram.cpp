// Unigram as HF tokenizers' models/unigram/model.rs encodes (encode_optimized, fuse_unk, byte_fallback), and
// its tokenizer.json reader.
#include "berth/tokenizer/unigram.h"

#include <cstdio>
#include <limits>

#include "berth/core/error.h"
#include "json_fields.h"
#include "piece_cache.h"
#include "pipeline_json.h"
#include "serde_float.h"
#include "vocab_trie.h"

namespace berth::tokenizer {

struct Unigram::Lookup {
  VocabTrie trie;
  std::vector<double> scores;  // by id
};

namespace {

// HF's kUnkPenalty: an unknown code point scores this much below the vocabulary's lowest score.
constexpr double kUnkPenalty = 10.0;

// The best path that ends at each byte of the piece: its score, its last token and where that token starts.
struct PathEnd {
  double score = 0;
  int32_t id = 0;
  int32_t start = -1;  // -1: no path ends here yet
};

uint32_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

}  // namespace

Unigram::Unigram(std::vector<std::pair<std::string, double>> vocab, std::optional<int64_t> unk_id,
                 bool byte_fallback, const std::string& where)
    : vocab_(std::move(vocab)),
      unk_id_(unk_id),
      byte_fallback_(byte_fallback),
      where_(where),
      cache_id_(PieceCache::new_model_id()) {
  BERTH_CHECK(vocab_.size() < (size_t{1} << 31), where, ".vocab: ", vocab_.size(),
              " pieces, more than berth's 2^31-1. Fix: use a smaller vocabulary");
  if (unk_id_) {
    BERTH_CHECK(!vocab_.empty(), where,
                ".vocab: empty, but unk_id is set and needs a piece. Fix: add the unk piece (e.g. "
                "[\"<unk>\", 0.0]) to the vocabulary");
    BERTH_CHECK(*unk_id_ >= 0 && static_cast<size_t>(*unk_id_) < vocab_.size(), where, ".unk_id: ", *unk_id_,
                " is not a piece of the vocabulary (ids 0..", vocab_.size() - 1,
                "). Fix: set unk_id to the id of the unk piece, or to null");
  }
  auto lookup = std::make_unique<Lookup>();
  std::vector<std::pair<std::string_view, int32_t>> keys;
  keys.reserve(vocab_.size());
  lookup->scores.reserve(vocab_.size());
  double min_score = std::numeric_limits<double>::infinity();
  ids_.reserve(vocab_.size());
  for (size_t id = 0; id < vocab_.size(); ++id) {
    const auto& [piece, score] = vocab_[id];
    ids_[piece] = static_cast<int64_t>(id);  // a repeated piece is its last id, as HF's map has it
    keys.emplace_back(piece, static_cast<int32_t>(id));
    lookup->scores.push_back(score);
    if (score < min_score) min_score = score;
  }
  lookup->trie.build(keys);  // a repeated piece's later id overwrites the earlier one here too
  lookup_ = std::move(lookup);
  unk_score_ = min_score - kUnkPenalty;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const auto found = ids_.find(std::string_view(name));
    byte_ids_[b] = found == ids_.end() ? -1 : found->second;
  }
}

Unigram::~Unigram() = default;

void Unigram::best_path(std::string_view piece, std::vector<Span>& path) const {
  thread_local std::vector<PathEnd> ends;
  const auto size = static_cast<uint32_t>(piece.size());
  ends.assign(size + 1, PathEnd{});
  const VocabTrie& trie = lookup_->trie;
  const auto* bytes = reinterpret_cast<const unsigned char*>(piece.data());
  for (uint32_t start = 0; start < size;) {
    const double base = ends[start].score;
    const uint32_t char_length = utf8_length(bytes[start]);
    bool single_char_token = false;
    uint32_t node = trie.root();
    for (uint32_t end = start; end < size;) {
      node = trie.step(node, bytes[end++]);
      if (node == VocabTrie::kNoNode) break;
      const int32_t id = trie.token_at(node);
      if (id == VocabTrie::kNoToken) continue;
      PathEnd& target = ends[end];
      const double candidate = lookup_->scores[static_cast<size_t>(id)] + base;
      if (target.start < 0 || candidate > target.score) target = {candidate, id, static_cast<int32_t>(start)};
      single_char_token = single_char_token || end - start == char_length;
    }
    if (!single_char_token) {
      PathEnd& target = ends[start + char_length];
      const double candidate = unk_score_ + base;
      if (target.start < 0 || candidate > target.score) {
        BERTH_CHECK(unk_id_.has_value(), where_, ": the piece \"", piece,
                    "\" has a character that no token covers and unk_id is null. Fix: set unk_id to the unk "
                    "token's id (HF refuses this piece too)");
        target = {candidate, static_cast<int32_t>(*unk_id_), static_cast<int32_t>(start)};
      }
    }
    start += char_length;
  }
  path.clear();
  for (uint32_t end = size; end > 0;) {
    const PathEnd& node = ends[end];
    BERTH_BUG(node.start >= 0, "Unigram's best path has no token ending at byte ", end, " of a piece");
    path.push_back({static_cast<uint32_t>(node.start), end, node.id});
    end = static_cast<uint32_t>(node.start);
  }
}

void Unigram::emit_unknown(std::string_view piece, uint32_t begin, uint32_t end,
                           std::vector<ModelToken>& out) const {
  const std::string_view text = piece.substr(begin, end - begin);
  if (const auto found = ids_.find(text); found != ids_.end()) {
    out.push_back({found->second, begin, end});
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (char b : text) all = all && byte_ids_[static_cast<unsigned char>(b)] >= 0;
    if (all) {
      for (char b : text) out.push_back({byte_ids_[static_cast<unsigned char>(b)], begin, end});
      return;
    }
  }
  BERTH_CHECK(unk_id_.has_value(), where_, ": \"", text,
              "\" is not a token and unk_id is null. Fix: set unk_id to the unk token's id");
  out.push_back({*unk_id_, begin, end});
}

void Unigram::tokenize(std::string_view piece, std::vector<ModelToken>& out) const {
  if (piece.empty()) return;
  PieceCache* cache = piece.size() <= PieceCache::kMaxLength ? &PieceCache::of(cache_id_) : nullptr;
  if (cache && cache->find(piece, 0, out)) return;
  const size_t first = out.size();
  tokenize_uncached(piece, out);
  if (cache) cache->add(piece, 0, out, first);
}

void Unigram::tokenize_uncached(std::string_view piece, std::vector<ModelToken>& out) const {
  thread_local std::vector<Span> path;
  best_path(piece, path);
  // The path runs backwards; consecutive unk tokens fuse into one run (HF's fuse_unk, always on), which is
  // then looked up as a whole.
  std::optional<std::pair<uint32_t, uint32_t>> unknown;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (unk_id_ && it->id == *unk_id_) {
      unknown = unknown ? std::pair{unknown->first, it->end} : std::pair{it->begin, it->end};
      continue;
    }
    if (unknown) emit_unknown(piece, unknown->first, unknown->second, out), unknown.reset();
    out.push_back({it->id, it->begin, it->end});
  }
  if (unknown) emit_unknown(piece, unknown->first, unknown->second, out);
}

std::optional<int64_t> Unigram::token_to_id(std::string_view token) const {
  const auto found = ids_.find(token);
  return found == ids_.end() ? std::nullopt : std::optional<int64_t>(found->second);
}

std::string Unigram::id_to_token(int64_t id) const {
  return id >= 0 && static_cast<size_t>(id) < vocab_.size() ? vocab_[static_cast<size_t>(id)].first : "";
}

namespace {

// model.vocab from the JSON, where the reader left it (a list of another shape, for the error).
std::vector<std::pair<std::string, double>> parse_scored_pieces(const JsonFields& fields) {
  const nlohmann::json& list = fields.raw("vocab");
  BERTH_CHECK(list.is_array(), fields.at("vocab"), ": expected a list of [piece, score] pairs, found ",
              list.type_name(),
              ". Fix: repair the tokenizer.json (HF tokenizers writes it with Tokenizer.save)");
  std::vector<std::pair<std::string, double>> vocab;
  vocab.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& entry = list[i];
    BERTH_CHECK(entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_number(),
                fields.at("vocab"), "[", i, "]: expected [\"piece\", score], found ",
                entry.dump().substr(0, 80),
                ". Fix: repair the tokenizer.json (HF tokenizers writes it with Tokenizer.save)");
    // As HF reads it (serde_float.h); an integer score is exact either way.
    const double score = entry[1].get<double>();
    vocab.emplace_back(entry[0].get<std::string>(),
                       entry[1].is_number_float() ? serde_json_float(score) : score);
  }
  return vocab;
}

}  // namespace

std::unique_ptr<TokenModel> parse_unigram(const JsonFields& fields, ModelArrays& arrays) {
  std::vector<std::pair<std::string, double>> vocab =
      arrays.scores ? std::move(*arrays.scores) : parse_scored_pieces(fields);
  std::optional<int64_t> unk_id;
  if (fields.has("unk_id")) {
    const nlohmann::json& id = fields.raw("unk_id");
    BERTH_CHECK(id.is_number_unsigned() || (id.is_number_integer() && id.get<int64_t>() >= 0),
                fields.at("unk_id"), ": expected the unk token's id (an integer from 0) or null, found ",
                id.dump().substr(0, 80), ". Fix: set it to the id of the vocabulary's unk piece");
    unk_id = id.get<int64_t>();
  }
  return std::make_unique<Unigram>(std::move(vocab), unk_id, fields.get<bool>("byte_fallback", false),
                                   fields.path());
}

}  // namespace berth::tokenizer
