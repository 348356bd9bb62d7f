// HF's truncate_encodings, as lengths: the shorter sequence keeps what it has if the longer can take the
// rest; otherwise both get half.
#include "truncation.h"

#include <algorithm>
#include <utility>

#include "berth/core/error.h"

namespace berth::tokenizer {

const char* strategy_name(TruncationStrategy strategy) {
  switch (strategy) {
    case TruncationStrategy::LongestFirst:
      return "longest_first";
    case TruncationStrategy::OnlyFirst:
      return "only_first";
    case TruncationStrategy::OnlySecond:
      return "only_second";
  }
  return "?";
}

KeptLengths kept_lengths(size_t first, std::optional<size_t> second, size_t max_length,
                         TruncationStrategy strategy) {
  if (max_length == 0) return {0, 0};
  const size_t total = first + second.value_or(0);
  if (total <= max_length) return {first, second.value_or(0)};
  const size_t to_remove = total - max_length;
  if (strategy == TruncationStrategy::LongestFirst) {
    if (!second) return {max_length, 0};
    size_t n1 = first, n2 = *second;
    const bool swap = n1 > n2;
    if (swap) std::swap(n1, n2);
    n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
    if (n1 + n2 > max_length) {
      n1 = max_length / 2;
      n2 = n1 + max_length % 2;
    }
    if (swap) std::swap(n1, n2);
    return {std::min(n1, first), std::min(n2, *second)};
  }
  const bool only_first = strategy == TruncationStrategy::OnlyFirst;
  BERTH_CHECK(only_first || second, "truncation only_second needs a text pair, but this input is a single ",
              "text (", total, " tokens > max_length ", max_length,
              " without special tokens); HF tokenizers fails the same way ('Second sequence not provided'). ",
              "Fix: truncate with longest_first or only_first, or give every input a text_pair");
  const size_t target = only_first ? first : *second;
  BERTH_CHECK(target > to_remove, "truncation ", strategy_name(strategy), ": ", to_remove,
              " tokens must go to fit max_length ", max_length, " (without special tokens) but the ",
              only_first ? "first" : "second", " sequence has only ", target,
              "; HF tokenizers fails the same way ('Sequence to truncate too short to ",
              "respect the provided max_length'). Fix: truncate with longest_first or raise max_length");
  if (only_first) return {first - to_remove, second.value_or(0)};
  return {first, *second - to_remove};
}

size_t room_for_sequences(size_t max_length, size_t special_tokens, bool pair) {
  BERTH_CHECK(max_length >= special_tokens, "truncation max_length ", max_length, " leaves no room for the ",
              special_tokens, " special tokens the template adds to a ", pair ? "pair" : "single text",
              ". Fix: use max_length ", special_tokens, " or more");
  return max_length - special_tokens;
}

}  // namespace berth::tokenizer
