// A dataset tokenised once: N encodings and their labels, optionally cached in a file keyed by a fingerprint.
#pragma once

#include "berth/tokenizer/encoding.h"

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace berth::data {

struct TokenizedDatasetOptions {
  // Threads running the encode function; rows keep their order whatever the count. 0 = hardware threads.
  size_t threads = 1;
  // When set, the encodings are read from this file if it was written for the same fingerprint, and written
  // there after a build otherwise (a missing, stale or corrupt cache is rebuilt, with a note).
  std::string cache_path;
  // Whatever decides the encodings: the tokenizer files' hash, its settings, the data file's name and size...
  // The caller composes it; a cache written for another fingerprint is stale.
  std::string fingerprint;
  // Receives the one-line notes about the cache (rebuilt because ..., written to ...); stderr when empty.
  std::function<void(const std::string&)> note;
};

class TokenizedDataset {
 public:
  using EncodeFn = std::function<tokenizer::Encoding(size_t row)>;

  // Runs `encode` once for each row 0..rows-1 (or loads the cache, see the options). `labels`: (N,) int64 for
  // single-label classification, (N,) float for regression, (N, L) float for multi-label, (N, 2) int64 for
  // question answering's start/end token positions, or undefined for unlabelled data. An exception from
  // `encode` propagates (the one of the lowest failing row).
  static TokenizedDataset build(size_t rows, const EncodeFn& encode, at::Tensor labels,
                                const TokenizedDatasetOptions& options = {});

  // Throws berth::Error when an encoding's fields disagree in length or the labels do not fit (see build).
  TokenizedDataset(std::vector<tokenizer::Encoding> encodings, at::Tensor labels);

  size_t size() const { return encodings_.size(); }
  // row < size(): a row past the end is a broken index in the caller (berth::InternalError).
  const tokenizer::Encoding& encoding(size_t row) const;
  const std::vector<tokenizer::Encoding>& encodings() const { return encodings_; }
  const at::Tensor& labels() const { return labels_; }  // undefined when unlabelled
  // Whether build() read the encodings from the cache rather than running the encode function.
  bool from_cache() const { return from_cache_; }

  // The cache file: a safetensors file holding the encodings' fields, the labels and the fingerprint.
  void save_cache(const std::string& path, const std::string& fingerprint) const;
  // Throws berth::Error when the file is missing, corrupt or written for another fingerprint.
  static TokenizedDataset load_cache(const std::string& path, const std::string& fingerprint);

 private:
  std::vector<tokenizer::Encoding> encodings_;
  at::Tensor labels_;
  bool from_cache_ = false;
};

}  // namespace berth::data
