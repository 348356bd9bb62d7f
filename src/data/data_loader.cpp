// The DataLoader: dynamic padding, the distributed sampler's rows, and a bounded prefetch queue on one
// thread.
#include "berth/data/data_loader.h"
#include "berth/data/word_tag_dataset.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "berth/core/error.h"

#include <ATen/CPUGeneratorImpl.h>

namespace berth::data {

Batch collate(const TokenizedDataset& dataset, const std::vector<size_t>& rows, int64_t pad_token_id,
              size_t pad_to_multiple_of, BatchLabels labels) {
  size_t longest = 0;
  for (size_t row : rows) longest = std::max(longest, dataset.encoding(row).ids.size());
  if (pad_to_multiple_of > 0)
    longest = (longest + pad_to_multiple_of - 1) / pad_to_multiple_of * pad_to_multiple_of;

  const auto batch = static_cast<int64_t>(rows.size());
  const auto length = static_cast<int64_t>(longest);
  const auto options = at::TensorOptions().dtype(at::kLong);
  // each: (B, T)
  at::Tensor input_ids = at::full({batch, length}, pad_token_id, options);
  at::Tensor token_type_ids = at::zeros({batch, length}, options);
  at::Tensor attention_mask = at::zeros({batch, length}, options);
  int64_t* ids = input_ids.data_ptr<int64_t>();
  int64_t* types = token_type_ids.data_ptr<int64_t>();
  int64_t* mask = attention_mask.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const tokenizer::Encoding& e = dataset.encoding(rows[static_cast<size_t>(b)]);
    const int64_t start = b * length;
    std::copy(e.ids.begin(), e.ids.end(), ids + start);
    std::copy(e.type_ids.begin(), e.type_ids.end(), types + start);
    if (e.attention_mask.empty()) {
      std::fill(mask + start, mask + start + static_cast<int64_t>(e.ids.size()), 1);
    } else {
      std::copy(e.attention_mask.begin(), e.attention_mask.end(), mask + start);
    }
  }
  Batch out{{"input_ids", input_ids}, {"token_type_ids", token_type_ids}, {"attention_mask", attention_mask}};
  if (labels == BatchLabels::InputIds) {
    // HF masks every pad_token_id, padding or not (a pad token that is also EOS is not learnt either).
    out.emplace("labels", input_ids.masked_fill(input_ids == pad_token_id, -100));
  } else if (labels == BatchLabels::TokenLabels && dataset.labels().defined()) {
    out.emplace("labels", collate_token_labels(dataset.labels(), rows, length));
  } else if ((labels == BatchLabels::Dataset || labels == BatchLabels::AnswerSpans) &&
             dataset.labels().defined()) {
    std::vector<int64_t> index(rows.begin(), rows.end());
    const at::Tensor chosen = dataset.labels().index_select(0, at::tensor(index, options));
    if (labels == BatchLabels::AnswerSpans) {
      out.emplace("start_positions", chosen.select(1, 0).contiguous());
      out.emplace("end_positions", chosen.select(1, 1).contiguous());
    } else {
      out.emplace("labels", chosen);
    }
  }
  return out;
}

namespace {

// (B, T): 1 for the rows' special tokens (by their special_tokens_mask; all of them when a row has none) and
// for padding, as HF's collator marks them for get_special_tokens_mask.
at::Tensor special_tokens_mask(const TokenizedDataset& dataset, const std::vector<size_t>& rows,
                               int64_t length) {
  at::Tensor special = at::ones({static_cast<int64_t>(rows.size()), length}, at::kLong);
  int64_t* out = special.data_ptr<int64_t>();
  for (size_t b = 0; b < rows.size(); ++b) {
    const tokenizer::Encoding& e = dataset.encoding(rows[b]);
    if (e.special_tokens_mask.size() == e.ids.size())
      std::copy(e.special_tokens_mask.begin(), e.special_tokens_mask.end(),
                out + static_cast<int64_t>(b) * length);
  }
  return special;
}

// (B, T, 2): each token's [start, end) in its text, (0, 0) for padding and for rows without offsets.
at::Tensor token_offsets(const TokenizedDataset& dataset, const std::vector<size_t>& rows, int64_t length) {
  at::Tensor offsets = at::zeros({static_cast<int64_t>(rows.size()), length, 2}, at::kLong);
  int64_t* out = offsets.data_ptr<int64_t>();
  for (size_t b = 0; b < rows.size(); ++b) {
    const tokenizer::Encoding& e = dataset.encoding(rows[b]);
    if (e.offsets.size() != e.ids.size()) continue;
    int64_t* row = out + static_cast<int64_t>(b) * length * 2;
    for (size_t t = 0; t < e.offsets.size(); ++t) {
      row[2 * t] = static_cast<int64_t>(e.offsets[t].first);
      row[2 * t + 1] = static_cast<int64_t>(e.offsets[t].second);
    }
  }
  return offsets;
}

}  // namespace

Batch collate_batch(const TokenizedDataset& dataset, const std::vector<size_t>& rows,
                    const DataLoaderOptions& options, uint64_t epoch, uint64_t index) {
  Batch batch = collate(dataset, rows, options.pad_token_id, options.pad_to_multiple_of, options.labels);
  if (options.labels != BatchLabels::MaskedTokens) return batch;
  const at::Tensor ids = batch.at("input_ids");
  auto generator = at::make_generator<at::CPUGeneratorImpl>(
      mask_seed(options.seed, epoch, index * options.world_size + options.rank));
  const at::Tensor offsets =
      options.mlm.whole_word_mask ? token_offsets(dataset, rows, ids.size(1)) : at::Tensor();
  MaskedTokens masked =
      mask_tokens(ids, special_tokens_mask(dataset, rows, ids.size(1)), options.mlm, generator, offsets);
  batch["input_ids"] = masked.input_ids;
  batch.emplace("labels", masked.labels);
  return batch;
}

// One loop over the loader: the batches' rows fixed at its start, collated on demand or by the prefetch
// thread.
class DataLoader::Epoch {
 public:
  Epoch(const TokenizedDataset& dataset, const DataLoaderOptions& options,
        std::vector<std::vector<size_t>> batches, uint64_t epoch)
      : dataset_(dataset), options_(options), batches_(std::move(batches)), epoch_(epoch) {
    if (options_.prefetch > 0 && !batches_.empty()) thread_ = std::thread([this] { produce_all(); });
  }

  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  // Also the early-break path: the producer wakes from a full queue, sees stop_ and returns after at most the
  // batch it is collating.
  ~Epoch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  bool at_end() const { return next_ >= batches_.size(); }

  const Batch& current() {
    if (current_) return *current_;
    BERTH_CHECK(!failed_, "data loader: this loop stopped at batch ", next_, " of ", batches_.size(),
                " after collating it failed. Fix: start a new loop over the loader");
    if (options_.prefetch == 0) {
      try {
        current_ = make(next_);
      } catch (...) {
        failed_ = true;  // as with prefetching: the loop ends at the batch that failed
        throw;
      }
      return *current_;
    }
    Slot slot = take();
    if (slot.error) {
      failed_ = true;
      std::rethrow_exception(slot.error);
    }
    current_ = std::move(slot.batch);
    return *current_;
  }

  void advance() {
    if (!current_) current();  // a prefetched batch skipped unread must still leave the queue
    current_.reset();
    ++next_;
  }

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  Batch make(size_t k) const {
    return options_.collate_fn ? options_.collate_fn(dataset_, batches_[k])
                               : collate_batch(dataset_, batches_[k], options_, epoch_, k);
  }

  // The consumer's wait is bounded by batch_timeout: a stuck collate becomes an error, not a hang.
  Slot take() {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool ready =
        changed_.wait_for(lock, options_.batch_timeout, [&] { return !queue_.empty() || done_; });
    BERTH_CHECK(
        ready, "data loader: the prefetch thread delivered no batch within ", options_.batch_timeout.count(),
        " ms (batch ", next_, " of ", batches_.size(),
        "). Fix: check that the collate function finishes, or raise DataLoaderOptions::batch_timeout");
    BERTH_BUG(!queue_.empty(), "the prefetch thread finished before batch ", next_, " of ", batches_.size());
    Slot slot = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all();
    return slot;
  }

  void produce_all() {
    for (size_t k = 0; k < batches_.size(); ++k) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || queue_.size() < options_.prefetch; });
        if (stop_) break;
      }
      Slot slot;
      try {
        slot.batch = make(k);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = static_cast<bool>(slot.error);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) break;
        queue_.push_back(std::move(slot));
      }
      changed_.notify_all();
      if (failed) break;  // the consumer rethrows it; nothing after a failed batch is delivered
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
  }

  const TokenizedDataset& dataset_;
  const DataLoaderOptions options_;
  const std::vector<std::vector<size_t>> batches_;
  const uint64_t epoch_;

  // The consumer's side.
  size_t next_ = 0;
  std::optional<Batch> current_;
  bool failed_ = false;

  // Shared with the producer.
  std::mutex mutex_;
  std::condition_variable changed_;  // queue grew or shrank, stop or done set
  std::deque<Slot> queue_;
  bool stop_ = false;
  bool done_ = false;
  std::thread thread_;  // last: started after everything it reads exists
};

namespace {

DistributedSamplerOptions sampler_options(const TokenizedDataset& dataset, const DataLoaderOptions& options) {
  DistributedSamplerOptions sampler;
  sampler.rank = options.rank;
  sampler.world_size = options.world_size;
  sampler.seed = options.seed;
  sampler.shuffle = options.shuffle;
  sampler.drop_last = options.drop_last;
  if (options.group_by_length && options.shuffle) {
    sampler.lengths.reserve(dataset.size());
    for (size_t row = 0; row < dataset.size(); ++row)
      sampler.lengths.push_back(dataset.encoding(row).ids.size());
    sampler.group_batch_size = options.batch_size * options.world_size;
  }
  return sampler;
}

}  // namespace

DataLoader::DataLoader(const TokenizedDataset& dataset, DataLoaderOptions options)
    : dataset_(&dataset),
      options_(std::move(options)),
      sampler_(dataset.size(), sampler_options(dataset, options_)) {
  BERTH_CHECK(options_.batch_size > 0,
              "data loader: batch_size must be at least 1, found 0. Fix: pass a "
              "positive batch size");
}

size_t DataLoader::size() const {
  const size_t rows = sampler_.num_samples();
  return options_.drop_last ? rows / options_.batch_size
                            : (rows + options_.batch_size - 1) / options_.batch_size;
}

std::vector<std::vector<size_t>> DataLoader::batch_rows() const {
  const std::vector<size_t> rows = sampler_.indices();
  std::vector<std::vector<size_t>> batches;
  for (size_t start = 0; start < rows.size(); start += options_.batch_size) {
    const size_t end = std::min(rows.size(), start + options_.batch_size);
    if (options_.drop_last && end - start < options_.batch_size) break;
    batches.emplace_back(rows.begin() + static_cast<std::ptrdiff_t>(start),
                         rows.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

DataLoader::Iterator DataLoader::begin() const {
  return Iterator(std::make_shared<Epoch>(*dataset_, options_, batch_rows(), sampler_.epoch()));
}

DataLoader::Iterator::Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {
  if (epoch_ && epoch_->at_end()) epoch_.reset();
}

const Batch& DataLoader::Iterator::operator*() const {
  BERTH_BUG(epoch_, "dereferencing the end of a DataLoader loop");
  return epoch_->current();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  BERTH_BUG(epoch_, "advancing past the end of a DataLoader loop");
  epoch_->advance();
  if (epoch_->at_end()) epoch_.reset();  // the last reference: joins the (finished) producer
  return *this;
}

bool DataLoader::Iterator::operator==(const Iterator& other) const { return epoch_ == other.epoch_; }

}  // namespace berth::data
