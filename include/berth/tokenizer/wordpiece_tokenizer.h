// The whole BERT tokenizer, exact to HF tokenizers (Rust): special tokens in the raw text, BertNormalizer,
// BertPreTokenizer, WordPiece, truncation, the [CLS]/[SEP] template, padding; single, pair and batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "berth/tokenizer/bert_normalizer.h"
#include "berth/tokenizer/encoding.h"
#include "berth/tokenizer/wordpiece.h"

namespace berth::tokenizer {

enum class TruncationStrategy { LongestFirst, OnlyFirst, OnlySecond };
enum class Side { Left, Right };

struct TruncationOptions {
  size_t max_length = 512;  // including the template's special tokens
  TruncationStrategy strategy = TruncationStrategy::LongestFirst;
  Side direction = Side::Right;  // which end loses tokens
  // berth's head+tail truncation (not in HF): a sequence that must lose tokens keeps its first keep_head
  // tokens and fills the rest of its budget from its end, dropping the middle ("head+tail", Sun et al.
  // 2019, "How to Fine-Tune BERT for Text Classification?"). Overrides direction; nullopt: HF's truncation.
  std::optional<size_t> keep_head = std::nullopt;
  size_t stride = 0;  // overlap of the overflowing windows; berth returns no overflow, so unused
};

enum class PaddingStrategy { Longest, MaxLength };

struct PaddingOptions {
  PaddingStrategy strategy = PaddingStrategy::Longest;  // Longest: to the longest encoding of the batch
  size_t max_length = 0;                                // MaxLength: to this length
  Side direction = Side::Right;
  size_t pad_to_multiple_of = 0;  // 0: off
  int64_t pad_id = 0;
  int64_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
};

// A token of the template ([CLS], [SEP]) and the ids it stands for.
struct TemplateSpecialToken {
  std::string name;
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
};

// One element of a template: a sequence (0 = $A, 1 = $B) or a special token, with its type id.
struct TemplatePiece {
  enum class Kind { Sequence, SpecialToken } kind = Kind::Sequence;
  int sequence = 0;
  std::string special_token;  // a TemplateSpecialToken name
  int64_t type_id = 0;
};

// HF's TemplateProcessing; bert() is "[CLS] $A [SEP]" and "[CLS] $A [SEP] $B:1 [SEP]:1".
struct TemplateProcessing {
  std::vector<TemplatePiece> single;
  std::vector<TemplatePiece> pair;
  std::vector<TemplateSpecialToken> special_tokens;

  static TemplateProcessing bert(const std::string& cls, int64_t cls_id, const std::string& sep,
                                 int64_t sep_id);
  // Special tokens the template adds around one sequence or a pair.
  size_t added_tokens(bool pair) const;
};

// A token matched verbatim in the raw text before normalization (HF's added tokens with normalized=false):
// "[MASK]" in the input becomes the [MASK] id.
struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool special = true;
};

// The special tokens' texts (tokenizer_config.json); their ids are looked up by text in the vocabulary.
struct SpecialTokenTexts {
  std::string unk = "[UNK]";
  std::string sep = "[SEP]";
  std::string pad = "[PAD]";
  std::string cls = "[CLS]";
  std::string mask = "[MASK]";
};

struct EncodeInput {
  std::string text;
  std::optional<std::string> text_pair;
};

class WordPieceTokenizer {
 public:
  struct SequenceTokens;  // internal: one sequence's ids and offsets before the template
  // The parts as given. TemplateProcessing and added tokens must name tokens of the model's vocabulary.
  WordPieceTokenizer(BertNormalizer normalizer, WordPiece model, TemplateProcessing post_processor,
                     std::vector<AddedToken> added_tokens, SpecialTokenTexts special_tokens = {});
  // BERT's usual set-up over a vocabulary, as transformers' BertTokenizerFast builds it: the special tokens
  // looked up by text, added as verbatim tokens, [CLS]/[SEP] template.
  static WordPieceTokenizer bert(WordPiece model, BertNormalizerOptions normalizer = {},
                                 SpecialTokenTexts special_tokens = {});

  void set_truncation(std::optional<TruncationOptions> truncation);
  void set_padding(std::optional<PaddingOptions> padding);
  const std::optional<TruncationOptions>& truncation() const { return truncation_; }
  const std::optional<PaddingOptions>& padding() const { return padding_; }
  // The longest input the model takes (tokenizer_config.json's model_max_length), when known.
  std::optional<size_t> model_max_length;

  const BertNormalizer& normalizer() const { return normalizer_; }
  const WordPiece& model() const { return model_; }
  const TemplateProcessing& post_processor() const { return post_processor_; }
  const std::vector<AddedToken>& added_tokens() const { return added_tokens_; }
  const SpecialTokenTexts& special_tokens() const { return special_tokens_; }
  // The id of a token text (special or not); throws berth::Error naming the token when absent.
  int64_t token_id(std::string_view token) const;

  // Throws berth::Error for text that is not UTF-8 and, as HF does, when truncation cannot fit: only_second
  // without a pair, or a sequence too short to remove the excess from.
  Encoding encode(std::string_view text, std::optional<std::string_view> text_pair = std::nullopt,
                  bool add_special_tokens = true) const;
  // Encodes on `threads` threads (0: every available CPU); results in input order. Padding Longest pads to
  // the batch's longest. The first failing input's error is thrown, naming its index.
  std::vector<Encoding> encode_batch(const std::vector<EncodeInput>& inputs, bool add_special_tokens = true,
                                     size_t threads = 0) const;

 private:
  void encode_sequence(std::string_view text, SequenceTokens& out) const;
  Encoding post_process(SequenceTokens& first, SequenceTokens* second, bool add_special_tokens) const;

  BertNormalizer normalizer_;
  WordPiece model_;
  TemplateProcessing post_processor_;
  std::vector<AddedToken> added_tokens_;
  SpecialTokenTexts special_tokens_;
  std::optional<TruncationOptions> truncation_;
  std::optional<PaddingOptions> padding_;
  bool added_first_byte_[256] = {};  // bytes that start an added token: the scan skips all others
};

// Pads encodings as HF's pad_encodings does (Longest: to the longest of them).
void pad_encodings(std::vector<Encoding>& encodings, const PaddingOptions& padding);

}  // namespace berth::tokenizer
