// Tokenizer: any HF tokenizer.json (BPE, Unigram, WordPiece or WordLevel with its normalizers,
// pre-tokenizers, added tokens, post-processor and decoder), encoded as HF tokenizers encodes it, offsets in
// code points. The one tokenizer every berth path uses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "berth/tokenizer/encode_options.h"
#include "berth/tokenizer/encoding.h"

namespace berth::tokenizer {

struct TokenizerJson;  // a parsed tokenizer.json (private to the library)

// The special tokens transformers knows by role (tokenizer_config.json's unk_token, ..., eos_token).
struct SpecialTokens {
  std::optional<std::string> unk, sep, pad, cls, mask, bos, eos;
};

class Tokenizer {
 public:
  // Reads a tokenizer.json; errors name the file and the path inside the JSON of what is wrong, e.g.
  // `pre_tokenizer.pretokenizers[1].type: "Foo" is not a pre-tokenizer berth knows; it knows ...`.
  static Tokenizer from_file(const std::string& path);
  // `source` names the text in errors.
  static Tokenizer from_json_text(const std::string& text, const std::string& source);
  // A tokenizer.json already parsed (and possibly edited, as load_tokenizer applies tokenizer_config.json);
  // `text` is what save_tokenizer writes back.
  static Tokenizer from_parsed(TokenizerJson json, std::string text, const std::string& source);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  Tokenizer(const Tokenizer&);
  Tokenizer& operator=(const Tokenizer&);
  ~Tokenizer();

  // As in HF, tokenizer.json's own "truncation" and "padding" apply until replaced.
  void set_truncation(std::optional<TruncationOptions> truncation);
  void set_padding(std::optional<PaddingOptions> padding);
  const std::optional<TruncationOptions>& truncation() const { return truncation_; }
  const std::optional<PaddingOptions>& padding() const { return padding_; }

  // Throws berth::Error for text that is not UTF-8 (naming the byte) and where HF's truncation fails.
  Encoding encode(std::string_view text, std::optional<std::string_view> text_pair = std::nullopt,
                  bool add_special_tokens = true) const;
  // HF's tokenizer(words, is_split_into_words=True): each word normalised, pre-tokenised and tokenised on its
  // own, word_ids giving each token's word (-1 for special tokens); offsets are code points within the
  // token's word, as HF reports them. Truncation, special tokens and padding as encode. A byte-level BPE adds
  // its prefix space to every word only when its pre-tokenizer has add_prefix_space, as in HF (transformers 5
  // no longer refuses one without: its words then encode as if each began a text).
  Encoding encode_words(const std::vector<std::string>& words, bool add_special_tokens = true) const;
  // On `threads` threads (0: every available CPU), results in input order; padding Longest pads to the
  // batch's longest. The first failing input's error is thrown, naming its index.
  std::vector<Encoding> encode_batch(const std::vector<EncodeInput>& inputs, bool add_special_tokens = true,
                                     size_t threads = 0) const;

  // HF's decode: the ids' tokens (special added tokens left out when skip_special_tokens) through the
  // decoder, or joined by spaces when the tokenizer has none. Ids outside the vocabulary are skipped.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = true) const;

  // Added tokens first, then the model's vocabulary, as HF looks them up.
  std::optional<int64_t> token_to_id(std::string_view token) const;
  // The same; throws berth::Error naming the token when the tokenizer has none such.
  int64_t token_id(std::string_view token) const;
  std::string id_to_token(int64_t id) const;
  // special_tokens.pad's id; throws berth::Error with the fix when there is no pad token.
  int64_t pad_token_id() const;
  // One more than the largest id of the model's vocabulary and the added tokens: the rows a model's
  // embedding needs.
  size_t vocab_size() const;
  // "BPE", "Unigram", "WordPiece" or "WordLevel".
  const std::string& model_type() const;
  // The model's tokens by id (empty strings where an id has none), for writing vocab.txt.
  std::vector<std::string> model_tokens() const;
  // The tokenizer.json text it was made from.
  const std::string& json_text() const;

  // From tokenizer_config.json (load_tokenizer): the longest input the model takes, the special tokens by
  // role, and the file itself (save_tokenizer writes it back with these two updated).
  std::optional<size_t> model_max_length;
  SpecialTokens special_tokens;
  std::string config_text;

 private:
  struct Pipeline;
  explicit Tokenizer(std::shared_ptr<const Pipeline> pipeline);
  Encoding encode_sequence(std::string_view text, int64_t type_id) const;
  // Truncation, the post-processor's special tokens and padding over one sequence's or a pair's encodings.
  Encoding finish(Encoding first, std::optional<Encoding> second, bool add_special_tokens) const;

  std::shared_ptr<const Pipeline> pipeline_;  // immutable, shared by copies
  std::optional<TruncationOptions> truncation_;
  std::optional<PaddingOptions> padding_;
};

}  // namespace berth::tokenizer
