// Tokenizer: any HF tokenizer.json (BPE, WordPiece or WordLevel with its normalizers, pre-tokenizers,
// added tokens and post-processor), encoded as HF tokenizers encodes it, offsets in code points.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "berth/tokenizer/encoding.h"
#include "berth/tokenizer/wordpiece_tokenizer.h"

namespace berth::tokenizer {

class Tokenizer {
 public:
  // Reads a tokenizer.json; errors name the file and the path inside the JSON of what is wrong, e.g.
  // `pre_tokenizer.pretokenizers[1].type: "Foo" is not a pre-tokenizer berth knows; it knows ...`.
  static Tokenizer from_file(const std::string& path);
  // `source` names the text in errors.
  static Tokenizer from_json_text(const std::string& text, const std::string& source);

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
  // On `threads` threads (0: every available CPU), results in input order; padding Longest pads to the
  // batch's longest.
  std::vector<Encoding> encode_batch(const std::vector<EncodeInput>& inputs, bool add_special_tokens = true,
                                     size_t threads = 0) const;

  // HF's decode: the ids' tokens (special added tokens left out when skip_special_tokens) through the
  // decoder, or joined by spaces when the tokenizer has none. Ids outside the vocabulary are skipped.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = true) const;

  // Added tokens first, then the model's vocabulary, as HF looks them up.
  std::optional<int64_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int64_t id) const;
  // "BPE", "WordPiece" or "WordLevel".
  const std::string& model_type() const;

  // From tokenizer_config.json (load_pipeline_tokenizer): the longest input the model takes, the pad token.
  std::optional<size_t> model_max_length;
  std::optional<std::string> pad_token;

 private:
  struct Pipeline;
  explicit Tokenizer(std::shared_ptr<const Pipeline> pipeline);
  Encoding encode_sequence(std::string_view text, int64_t type_id) const;

  std::shared_ptr<const Pipeline> pipeline_;  // immutable, shared by copies
  std::optional<TruncationOptions> truncation_;
  std::optional<PaddingOptions> padding_;
};

}  // namespace berth::tokenizer
