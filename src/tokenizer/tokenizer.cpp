// Tokenizer: HF's encode in its order: added tokens split out of the raw text, the rest normalized,
// pre-tokenized and tokenized by the model; each sequence truncated, then post-processed, then padded.
#include "berth/tokenizer/tokenizer.h"
#include "berth/core/input_file.h"

#include <fstream>
#include <sstream>
#include <unordered_set>

#include "added_vocabulary.h"
#include "bert_fast_path.h"
#include "berth/tokenizer/decoder.h"
#include "berth/tokenizer/normalizer.h"
#include "berth/tokenizer/post_processor.h"
#include "berth/tokenizer/pre_tokenizer.h"
#include "berth/tokenizer/token_model.h"
#include "encoding_ops.h"
#include "json_fields.h"
#include "parallel_encode.h"
#include "pipeline_json.h"
#include "tokenizer_json.h"
#include "truncation.h"
#include "utf8.h"

namespace berth::tokenizer {

struct Tokenizer::Pipeline {
  std::string json_text;
  std::string model_type;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<TokenModel> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<BertFastPath> bert;  // BERT's own pipeline, fused; null for any other
  AddedVocabulary added;
  std::unordered_set<int64_t> special_ids;  // added tokens marked special
  std::unordered_map<int64_t, std::string> added_by_id;
  size_t ids = 0;  // one more than the largest id of the model and the added tokens
};

namespace {

Side parse_side(const JsonFields& f, const char* key) {
  const std::string side = f.get<std::string>(key, "Right");
  BERTH_CHECK(side == "Right" || side == "Left", f.at(key), ": \"", side,
              "\" is not a side; HF's are Left, Right");
  return side == "Left" ? Side::Left : Side::Right;
}

std::optional<TruncationOptions> parse_truncation(const nlohmann::json& json, const std::string& path) {
  if (json.is_null()) return std::nullopt;
  const JsonFields f(json, path);
  TruncationOptions t;
  t.max_length = f.required<size_t>("max_length");
  t.direction = parse_side(f, "direction");
  const std::string strategy = f.get<std::string>("strategy", "LongestFirst");
  BERTH_CHECK(strategy == "LongestFirst" || strategy == "OnlyFirst" || strategy == "OnlySecond",
              f.at("strategy"), ": \"", strategy,
              "\" is not a truncation strategy; HF's are LongestFirst, OnlyFirst, OnlySecond");
  t.strategy = strategy == "OnlyFirst"    ? TruncationStrategy::OnlyFirst
               : strategy == "OnlySecond" ? TruncationStrategy::OnlySecond
                                          : TruncationStrategy::LongestFirst;
  t.stride = f.get<size_t>("stride", 0);
  return t;
}

std::optional<PaddingOptions> parse_padding(const nlohmann::json& json, const std::string& path) {
  if (json.is_null()) return std::nullopt;
  const JsonFields f(json, path);
  PaddingOptions p;
  const nlohmann::json& strategy = f.raw("strategy");
  if (strategy.is_object() && strategy.contains("Fixed")) {
    p.strategy = PaddingStrategy::MaxLength;
    p.max_length = JsonFields(strategy, f.at("strategy")).required<size_t>("Fixed");
  } else {
    BERTH_CHECK(strategy == "BatchLongest", f.at("strategy"),
                ": expected \"BatchLongest\" or {\"Fixed\": n}, found ", strategy.dump().substr(0, 80));
  }
  p.direction = parse_side(f, "direction");
  p.pad_to_multiple_of = f.get<size_t>("pad_to_multiple_of", 0);
  p.pad_id = f.get<int64_t>("pad_id", 0);
  p.pad_type_id = f.get<int64_t>("pad_type_id", 0);
  p.pad_token = f.get<std::string>("pad_token", "[PAD]");
  return p;
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_file(const std::string& path) {
  return from_json_text(read_input_file(path, "tokenizer file"), path);
}

Tokenizer Tokenizer::from_json_text(const std::string& text, const std::string& source) {
  return from_parsed(read_tokenizer_json(text, source), text, source);
}

Tokenizer Tokenizer::from_parsed(TokenizerJson json, std::string text, const std::string& source) {
  auto pipeline = std::make_shared<Pipeline>();
  pipeline->json_text = std::move(text);
  try {
    const JsonFields root(json.root, "tokenizer.json");
    const auto at = [&](const char* key) -> const nlohmann::json& {
      static const nlohmann::json null;
      return root.has(key) ? root.raw(key) : null;
    };
    pipeline->normalizer = parse_normalizer(at("normalizer"), "normalizer");
    pipeline->pre_tokenizer = parse_pre_tokenizer(at("pre_tokenizer"), "pre_tokenizer");
    const JsonFields model(root.raw("model"), "model");
    pipeline->model_type = model.has("type")                          ? model.required<std::string>("type")
                           : json.model.merges || model.has("merges") ? "BPE"
                           : model.has("max_input_chars_per_word")    ? "WordPiece"
                                                                      : "WordLevel";
    pipeline->model = parse_token_model(root.raw("model"), "model", std::move(json.model));
    pipeline->added = AddedVocabulary(AddedVocabulary::parse(at("added_tokens"), "added_tokens"),
                                      pipeline->normalizer.get());
    for (const AddedTokenSpec& t : pipeline->added.tokens()) {
      pipeline->added_by_id[t.id] = t.content;
      if (t.special) pipeline->special_ids.insert(t.id);
    }
    pipeline->decoder = parse_decoder(at("decoder"), "decoder");
    pipeline->bert =
        BertFastPath::for_pipeline(json.root, as_wordpiece(*pipeline->model), pipeline->added.tokens());
    const Pipeline* raw = pipeline.get();
    size_t ids = pipeline->model->vocab_size();
    for (const auto& [id, content] : pipeline->added_by_id) ids = std::max(ids, static_cast<size_t>(id) + 1);
    pipeline->post_processor = parse_post_processor(
        at("post_processor"), "post_processor",
        [raw](int64_t id) {
          const auto added = raw->added_by_id.find(id);
          return added != raw->added_by_id.end() ? added->second : raw->model->id_to_token(id);
        },
        ids);
    pipeline->ids = ids;
    Tokenizer tokenizer(std::move(pipeline));
    tokenizer.truncation_ = parse_truncation(at("truncation"), "truncation");
    tokenizer.padding_ = parse_padding(at("padding"), "padding");
    return tokenizer;
  } catch (const Error& e) {
    BERTH_FAIL(source, ": ", e.what());
  }
}

void Tokenizer::set_truncation(std::optional<TruncationOptions> truncation) {
  truncation_ = std::move(truncation);
}
void Tokenizer::set_padding(std::optional<PaddingOptions> padding) { padding_ = std::move(padding); }

Encoding Tokenizer::encode_sequence(std::string_view text, int64_t type_id) const {
  const Pipeline& p = *pipeline_;
  thread_local std::vector<SourceToken> found;
  found.clear();
  if (p.bert) {
    try {
      p.bert->encode(text, found);
      return sequence_encoding(found, type_id);
    } catch (const Error&) {
      found.clear();  // not UTF-8: the general path below names the byte where it is in the whole text
    }
  }
  uint32_t word = 0;  // HF's word: each added token and each pre-tokenizer split is one
  const auto push = [&](int64_t id, std::pair<uint32_t, uint32_t> origin) {
    found.push_back({id, origin.first, origin.second, word});
  };
  // Per thread: a piece's UTF-8 for the model and the code point each of its bytes belongs to.
  thread_local std::string utf8;
  thread_local std::vector<uint32_t> char_at;
  thread_local std::vector<ModelToken> tokens;
  for (TextPart& part : p.added.split(text, p.normalizer.get())) {
    if (part.text.empty()) continue;
    if (part.added_id) {
      push(*part.added_id, {part.text.chars.front().begin, part.text.chars.back().end});
      ++word;
      continue;
    }
    PieceText pieces = PieceText::whole(std::move(part.text));
    if (p.pre_tokenizer) p.pre_tokenizer->split(pieces);
    const std::vector<AlignedText::Char>& chars = pieces.text.chars;
    for (const auto& [begin, end] : pieces.pieces) {
      utf8.clear();
      char_at.clear();
      bool ascii = true;
      for (uint32_t i = begin; i < end; ++i) {
        const char32_t c = chars[i].c;
        if (c < 0x80) {
          utf8.push_back(static_cast<char>(c));
          if (!ascii) char_at.push_back(i);
          continue;
        }
        if (ascii) {  // from here on each byte needs its code point
          ascii = false;
          for (uint32_t k = begin; k < i; ++k) char_at.push_back(k);
        }
        char bytes[4];
        const size_t n = utf8::encode(c, bytes);
        utf8.append(bytes, n);
        char_at.insert(char_at.end(), n, i);
      }
      tokens.clear();
      p.model->tokenize(utf8, tokens);
      // HF's offsets: the first code point's start to the last one's end (a byte token: its code point's).
      for (const ModelToken& t : tokens) {
        const uint32_t first = ascii ? begin + t.begin : char_at[t.begin];
        const uint32_t last = ascii ? begin + t.end - 1 : char_at[t.end - 1];
        push(t.id, {chars[first].begin, chars[last].end});
      }
      ++word;
    }
  }
  return sequence_encoding(found, type_id);
}

Encoding Tokenizer::encode(std::string_view text, std::optional<std::string_view> text_pair,
                           bool add_special_tokens) const {
  Encoding first = encode_sequence(text, 0);
  std::optional<Encoding> second;
  if (text_pair) second = encode_sequence(*text_pair, 1);
  return finish(std::move(first), std::move(second), add_special_tokens);
}

Encoding Tokenizer::encode_words(const std::vector<std::string>& words, bool add_special_tokens) const {
  // HF's PreTokenized input: each word is its own text (added tokens, normalizer, pre-tokenizer, model), and
  // the words' encodings are merged without growing offsets, so each offset is within its word.
  Encoding first;
  for (size_t i = 0; i < words.size(); ++i) {
    Encoding word = encode_sequence(words[i], 0);
    word.word_ids.assign(word.size(), static_cast<int64_t>(i));
    merge_encodings(first, std::move(word));
  }
  return finish(std::move(first), std::nullopt, add_special_tokens);
}

Encoding Tokenizer::finish(Encoding first, std::optional<Encoding> second, bool add_special_tokens) const {
  if (truncation_) {
    size_t max_length = truncation_->max_length;
    const PostProcessor* post = pipeline_->post_processor.get();
    const size_t added = post ? post->added_tokens(second.has_value()) : 0;
    if (add_special_tokens && added > 0)
      max_length = room_for_sequences(max_length, added, second.has_value());
    const KeptLengths kept =
        kept_lengths(first.size(), second ? std::optional<size_t>(second->size()) : std::nullopt, max_length,
                     truncation_->strategy);
    truncate_encoding(first, kept.first, *truncation_);
    if (second) truncate_encoding(*second, kept.second, *truncation_);
  }
  Encoding out =
      post_process(pipeline_->post_processor.get(), std::move(first), std::move(second), add_special_tokens);
  if (padding_) {
    std::vector<Encoding> one{std::move(out)};
    pad_encodings(one, *padding_);
    out = std::move(one.front());
  }
  return out;
}

std::vector<Encoding> Tokenizer::encode_batch(const std::vector<EncodeInput>& inputs, bool add_special_tokens,
                                              size_t threads) const {
  std::optional<PaddingOptions> padding = padding_;
  Tokenizer unpadded = *this;  // pads once, over the whole batch
  unpadded.padding_.reset();
  std::vector<Encoding> out = encode_in_parallel(inputs.size(), threads, [&](size_t i) {
    const EncodeInput& input = inputs[i];
    std::optional<std::string_view> pair;
    if (input.text_pair) pair = *input.text_pair;
    return unpadded.encode(input.text, pair, add_special_tokens);
  });
  if (padding) pad_encodings(out, *padding);
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (skip_special_tokens && pipeline_->special_ids.count(id)) continue;
    std::string token = id_to_token(id);
    if (!token.empty()) tokens.push_back(std::move(token));
  }
  std::string out;
  if (!pipeline_->decoder) {
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  pipeline_->decoder->decode_chain(tokens);
  for (const std::string& t : tokens) out += t;
  return out;
}

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = pipeline_->added.token_to_id(std::string(token))) return id;
  return pipeline_->model->token_to_id(token);
}

std::string Tokenizer::id_to_token(int64_t id) const {
  const auto added = pipeline_->added_by_id.find(id);
  return added != pipeline_->added_by_id.end() ? added->second : pipeline_->model->id_to_token(id);
}

int64_t Tokenizer::token_id(std::string_view token) const {
  const std::optional<int64_t> id = token_to_id(token);
  BERTH_CHECK(id, "the tokenizer has no token \"", token,
              "\". Fix: use a token of its vocabulary or added tokens (tokenizer.json), or set the special ",
              "token in tokenizer_config.json to one it has");
  return *id;
}

int64_t Tokenizer::pad_token_id() const {
  BERTH_CHECK(
      special_tokens.pad, "the tokenizer has no pad token, which batches of different lengths need. ",
      "Fix: set \"pad_token\" in its tokenizer_config.json (decoder models often use their eos token)");
  return token_id(*special_tokens.pad);
}

size_t Tokenizer::vocab_size() const { return pipeline_->ids; }

std::vector<std::string> Tokenizer::model_tokens() const {
  std::vector<std::string> out(pipeline_->model->vocab_size());
  for (size_t id = 0; id < out.size(); ++id)
    out[id] = pipeline_->model->id_to_token(static_cast<int64_t>(id));
  return out;
}

const std::string& Tokenizer::json_text() const { return pipeline_->json_text; }

const std::string& Tokenizer::model_type() const { return pipeline_->model_type; }

}  // namespace berth::tokenizer
