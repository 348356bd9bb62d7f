// WordPiece vocabulary training: HF's BpeTrainer with a continuing-subword prefix (HF's WordPieceTrainer).
#include "berth/tokenizer/wordpiece_trainer.h"

#include "berth/tokenizer/bpe_trainer.h"

namespace berth::tokenizer {

std::vector<std::string> train_wordpiece(const std::unordered_map<std::string, uint64_t>& word_counts,
                                         const WordPieceTrainerOptions& options) {
  BpeTrainerOptions bpe;
  bpe.vocab_size = options.vocab_size;
  bpe.min_frequency = options.min_frequency;
  bpe.special_tokens = options.special_tokens;
  bpe.limit_alphabet = options.limit_alphabet;
  bpe.initial_alphabet = options.initial_alphabet;
  bpe.continuing_subword_prefix = options.continuing_subword_prefix;
  bpe.affixed_token_order = options.continuation_order;
  // The vocabulary is WordPiece's; the merges are not needed to tokenize with it.
  return train_bpe(word_counts, bpe).vocab;
}

}  // namespace berth::tokenizer
