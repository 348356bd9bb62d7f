// Batches of a tokenised dataset: this rank's rows per epoch, padded to the longest in each batch, optionally
// collated ahead on a background thread.
#pragma once

#include "berth/data/distributed_sampler.h"
#include "berth/data/mask_tokens.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/placement/batch_check.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <vector>

namespace berth::data {

// Where a batch's "labels" come from.
enum class BatchLabels {
  Dataset,   // the dataset's labels of the rows (absent when it has none)
  InputIds,  // HF's DataCollatorForLanguageModeling(mlm=False): input_ids with pad_token_id tokens -100
  // HF's DataCollatorForLanguageModeling(mlm=True): some input_ids masked (mask_tokens), labels the masked
  // tokens' ids. The DataLoader masks (collate_batch); collate() alone gives no labels.
  MaskedTokens,
  // HF's DataCollatorForTokenClassification: the dataset's (N, L) per-token labels, cut or padded with -100
  // to the batch's length.
  TokenLabels,
  // HF's question-answering batches: the dataset's (N, 2) labels as "start_positions" and "end_positions",
  // (B,) each.
  AnswerSpans,
};

// {"input_ids", "token_type_ids", "attention_mask"}: (B, T) int64 with T the longest of these rows rounded up
// to a multiple of pad_to_multiple_of (when > 0); padding is pad_token_id / type 0 / mask 0. "labels": the
// rows' labels, (B,) or (B, L), absent when the dataset has none; or (B, T) from input_ids (see
// BatchLabels). Missing type ids read as 0, a missing mask as 1.
Batch collate(const TokenizedDataset& dataset, const std::vector<size_t>& rows, int64_t pad_token_id,
              size_t pad_to_multiple_of = 0, BatchLabels labels = BatchLabels::Dataset);

struct DataLoaderOptions;
// The batch the loader yields for `rows`, batch `index` of `epoch` on this rank: collate(), then for
// BatchLabels::MaskedTokens mask_tokens over the rows' special tokens and padding, seeded by
// mask_seed(options.seed, epoch, index * world_size + rank).
Batch collate_batch(const TokenizedDataset& dataset, const std::vector<size_t>& rows,
                    const DataLoaderOptions& options, uint64_t epoch, uint64_t index);

struct DataLoaderOptions {
  size_t batch_size = 32;
  bool shuffle = true;
  uint64_t seed = 0;
  // true: drop the rows that do not divide among the ranks and the last, incomplete batch. false: pad the
  // ranks to equal counts (see DistributedSampler) and keep the last batch, however small.
  bool drop_last = false;
  size_t rank = 0;
  size_t world_size = 1;
  int64_t pad_token_id = 0;
  size_t pad_to_multiple_of = 0;
  BatchLabels labels = BatchLabels::Dataset;
  MaskTokensOptions mlm;  // with BatchLabels::MaskedTokens; each batch's masks seeded by mask_seed(seed, ...)
  // HF's group_by_length: shuffle in megabatches sorted by length, so that each batch pads little (see
  // DistributedSamplerOptions::lengths). Only with shuffle.
  bool group_by_length = false;
  // Batches collated ahead on a background thread; 0 collates each on the consumer's thread when asked for.
  size_t prefetch = 2;
  // The longest the consumer waits for one prefetched batch before berth::Error says the collate is stuck.
  std::chrono::milliseconds batch_timeout{std::chrono::minutes(10)};
  // Replaces collate() (tests use it to make collating slow or throw); called with the batch's rows.
  std::function<Batch(const TokenizedDataset&, const std::vector<size_t>& rows)> collate_fn;
};

// Iterate with `for (const Batch& batch : loader)`; each loop is one epoch of this rank's batches. Leaving
// the loop early, or destroying the loader's iterators, stops the prefetch thread. An exception thrown while
// collating reaches the consumer at the batch that failed. The dataset must outlive the loader's iterators.
class DataLoader {
 public:
  // Throws berth::Error for batch_size 0 or a bad rank/world_size.
  DataLoader(const TokenizedDataset& dataset, DataLoaderOptions options);

  // Reshuffles for the next loop: the order depends on seed + epoch only.
  void set_epoch(uint64_t epoch) { sampler_.set_epoch(epoch); }
  size_t size() const;  // batches per epoch on this rank
  const DataLoaderOptions& options() const { return options_; }
  // The dataset rows of each batch of the current epoch.
  std::vector<std::vector<size_t>> batch_rows() const;

  class Epoch;
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    Iterator() = default;
    const Batch& operator*() const;
    const Batch* operator->() const { return &**this; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const;
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<Epoch> epoch);
    std::shared_ptr<Epoch> epoch_;  // null at the end
  };

  Iterator begin() const;  // starts an epoch (and its prefetch thread)
  Iterator end() const { return Iterator(); }

 private:
  const TokenizedDataset* dataset_;
  DataLoaderOptions options_;
  DistributedSampler sampler_;
};

}  // namespace berth::data
