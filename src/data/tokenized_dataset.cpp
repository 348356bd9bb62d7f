// Tokenising a dataset once (on several threads, rows in order) and caching the result in a safetensors file.
#include "berth/data/tokenized_dataset.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <thread>

#include "berth/core/error.h"
#include "berth/io/safetensors.h"

namespace berth::data {
namespace {

constexpr const char* kCacheFormat = "berth.tokenized_dataset.v1";

// The per-row length of each encoding field, in this order, is the cache's "lengths" tensor (N, 6).
enum Field { kIds, kTypeIds, kAttentionMask, kSpecialTokensMask, kOffsets, kSequenceIds, kFieldCount };

std::string shape_text(const at::Tensor& tensor) {
  std::string out = "[";
  for (int64_t i = 0; i < tensor.dim(); ++i) out += (i ? ", " : "") + std::to_string(tensor.size(i));
  return out + "]";
}

void check_encoding(const tokenizer::Encoding& e, size_t row) {
  const size_t n = e.ids.size();
  auto check = [&](size_t size, const char* field) {
    BERTH_CHECK(size == 0 || size == n, "tokenized dataset: row ", row, ": ", field, " has ", size,
                " entries but ids has ", n,
                ". Fix: the encode function must fill each field for every token "
                "(or leave it empty)");
  };
  check(e.type_ids.size(), "type_ids");
  check(e.attention_mask.size(), "attention_mask");
  check(e.special_tokens_mask.size(), "special_tokens_mask");
  check(e.offsets.size(), "offsets");
  check(e.sequence_ids.size(), "sequence_ids");
}

at::Tensor checked_labels(at::Tensor labels, size_t rows) {
  if (!labels.defined()) return labels;
  const bool single = labels.dim() == 1 && labels.scalar_type() == at::kLong;
  const bool regression = labels.dim() == 1 && at::isFloatingType(labels.scalar_type());
  const bool multi = labels.dim() == 2 && at::isFloatingType(labels.scalar_type());
  // (N, T) int64: per-token labels, -100 padded; (N, 2) int64: answer start/end positions.
  const bool tokens = labels.dim() == 2 && labels.scalar_type() == at::kLong;
  BERTH_CHECK(single || regression || multi || tokens,
              "tokenized dataset: labels must be (N,) int64 (single-label), (N,) "
              "float (regression), (N, L) float (multi-label), (N, T) int64 (per token) or (N, 2) int64 "
              "(answer start/end positions), found shape ",
              shape_text(labels), " of ", c10::toString(labels.scalar_type()),
              ". Fix: convert them, e.g. labels.to(torch::kLong)");
  BERTH_CHECK(labels.size(0) == static_cast<int64_t>(rows), "tokenized dataset: ", rows,
              " encodings but labels of shape ", shape_text(labels),
              ". Fix: give one label (row) per example");
  return labels.to(at::kCPU).contiguous();
}

// One field of every encoding, end to end: (sum of the field's lengths,).
template <typename T, typename Get>
at::Tensor flatten(const std::vector<tokenizer::Encoding>& encodings, Get get, at::ScalarType type) {
  int64_t total = 0;
  for (const auto& e : encodings) total += static_cast<int64_t>(get(e).size());
  at::Tensor out = at::empty({total}, at::TensorOptions().dtype(type));
  T* cursor = out.data_ptr<T>();
  for (const auto& e : encodings) cursor = std::copy(get(e).begin(), get(e).end(), cursor);
  return out;
}

void print_note(const TokenizedDatasetOptions& options, const std::string& text) {
  if (options.note) {
    options.note(text);
  } else {
    std::cerr << "berth: " << text << "\n";
  }
}

}  // namespace

TokenizedDataset::TokenizedDataset(std::vector<tokenizer::Encoding> encodings, at::Tensor labels)
    : encodings_(std::move(encodings)) {
  for (size_t row = 0; row < encodings_.size(); ++row) check_encoding(encodings_[row], row);
  labels_ = checked_labels(std::move(labels), encodings_.size());
}

const tokenizer::Encoding& TokenizedDataset::encoding(size_t row) const {
  // Rows come from the sampler or from 0..size()-1: one past the end is a broken index in the caller.
  BERTH_BUG(row < encodings_.size(), "TokenizedDataset::encoding: row ", row, " of a dataset of ",
            encodings_.size(), " rows; every row index must be below size()");
  return encodings_[row];
}

TokenizedDataset TokenizedDataset::build(size_t rows, const EncodeFn& encode, at::Tensor labels,
                                         const TokenizedDatasetOptions& options) {
  // Labels first: a mismatch should not wait for the tokenisation.
  labels = checked_labels(std::move(labels), rows);
  if (!options.cache_path.empty() && std::filesystem::exists(options.cache_path)) {
    try {
      TokenizedDataset cached = load_cache(options.cache_path, options.fingerprint);
      BERTH_CHECK(cached.size() == rows, options.cache_path, ": holds ", cached.size(),
                  " rows, the dataset has ", rows);
      cached.labels_ = labels;
      cached.from_cache_ = true;
      return cached;
    } catch (const Error& e) {
      print_note(options, std::string("rebuilding the tokenized cache: ") + e.what());
    }
  }

  std::vector<tokenizer::Encoding> encodings(rows);
  size_t threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = std::max<size_t>(1, std::min(threads, rows));
  // Contiguous chunks, one per thread: the first failure of the lowest chunk is the lowest failing row.
  const size_t chunk = rows == 0 ? 0 : (rows + threads - 1) / threads;
  std::vector<std::exception_ptr> errors(threads);
  std::atomic<size_t> first_failure{std::numeric_limits<size_t>::max()};
  auto work = [&](size_t t) {
    const size_t end = std::min(rows, (t + 1) * chunk);
    for (size_t row = t * chunk; row < end && row < first_failure.load(); ++row) {
      try {
        encodings[row] = encode(row);
      } catch (...) {
        errors[t] = std::current_exception();
        size_t expected = first_failure.load();
        while (row < expected && !first_failure.compare_exchange_weak(expected, row)) {
        }
        return;
      }
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (std::thread& thread : pool) thread.join();
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);

  TokenizedDataset dataset(std::move(encodings), labels);
  if (!options.cache_path.empty()) {
    try {
      dataset.save_cache(options.cache_path, options.fingerprint);
    } catch (const Error& e) {
      print_note(options,
                 std::string("could not write the tokenized cache (training goes on without): ") + e.what());
    }
  }
  return dataset;
}

void TokenizedDataset::save_cache(const std::string& path, const std::string& fingerprint) const {
  const int64_t rows = static_cast<int64_t>(encodings_.size());
  at::Tensor lengths = at::empty({rows, kFieldCount}, at::TensorOptions().dtype(at::kLong));
  int64_t* length = lengths.data_ptr<int64_t>();
  int64_t offset_count = 0;
  for (const auto& e : encodings_) {
    const size_t sizes[kFieldCount] = {
        e.ids.size(),     e.type_ids.size(),    e.attention_mask.size(), e.special_tokens_mask.size(),
        e.offsets.size(), e.sequence_ids.size()};
    for (size_t size : sizes) *length++ = static_cast<int64_t>(size);
    offset_count += static_cast<int64_t>(e.offsets.size());
  }
  // offsets: (tokens, 2) as [start, end)
  at::Tensor offsets = at::empty({offset_count, 2}, at::TensorOptions().dtype(at::kLong));
  int64_t* offset = offsets.data_ptr<int64_t>();
  for (const auto& e : encodings_) {
    for (const auto& [begin, end] : e.offsets) {
      *offset++ = static_cast<int64_t>(begin);
      *offset++ = static_cast<int64_t>(end);
    }
  }
  using tokenizer::Encoding;
  std::map<std::string, at::Tensor> tensors = {
      {"lengths", lengths},
      {"ids", flatten<int64_t>(
                  encodings_, [](const Encoding& e) -> const auto& { return e.ids; }, at::kLong)},
      {"type_ids", flatten<int64_t>(
                       encodings_, [](const Encoding& e) -> const auto& { return e.type_ids; }, at::kLong)},
      {"attention_mask",
       flatten<int64_t>(
           encodings_, [](const Encoding& e) -> const auto& { return e.attention_mask; }, at::kLong)},
      {"special_tokens_mask",
       flatten<int64_t>(
           encodings_, [](const Encoding& e) -> const auto& { return e.special_tokens_mask; }, at::kLong)},
      {"offsets", offsets},
      {"sequence_ids",
       flatten<int8_t>(
           encodings_, [](const Encoding& e) -> const auto& { return e.sequence_ids; }, at::kChar)},
  };
  if (labels_.defined()) tensors.emplace("labels", labels_);
  io::save_safetensors(
      path, tensors,
      {{"format", kCacheFormat}, {"fingerprint", fingerprint}, {"rows", std::to_string(rows)}});
}

TokenizedDataset TokenizedDataset::load_cache(const std::string& path, const std::string& fingerprint) {
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  const auto& metadata = file.metadata();
  auto value = [&](const std::string& key) {
    auto it = metadata.find(key);
    return it == metadata.end() ? std::string() : it->second;
  };
  BERTH_CHECK(value("format") == kCacheFormat, path, ": not a berth tokenized-dataset cache (format '",
              value("format"), "', expected '", kCacheFormat, "')");
  BERTH_CHECK(value("fingerprint") == fingerprint, path, ": written for fingerprint '", value("fingerprint"),
              "', not '", fingerprint, "' (the tokenizer, its settings or the data changed)");

  const at::Tensor lengths = file.tensor("lengths");
  BERTH_CHECK(lengths.dim() == 2 && lengths.size(1) == kFieldCount && lengths.scalar_type() == at::kLong &&
                  std::to_string(lengths.size(0)) == value("rows") &&
                  (lengths.numel() == 0 || lengths.min().item<int64_t>() >= 0),
              path, ": corrupt cache: \"lengths\" has shape ", shape_text(lengths), " for ", value("rows"),
              " rows");
  const at::Tensor sums = lengths.sum(0);
  auto field = [&](const char* name, Field f, at::ScalarType type, int64_t width) {
    at::Tensor t = file.tensor(name);
    BERTH_CHECK(t.scalar_type() == type && t.size(0) == sums[f].item<int64_t>() &&
                    (width == 1 ? t.dim() == 1 : (t.dim() == 2 && t.size(1) == width)),
                path, ": corrupt cache: \"", name, "\" has shape ", shape_text(t), " of ",
                c10::toString(t.scalar_type()), ", the lengths need ", sums[f].item<int64_t>(), " entries");
    return t;
  };
  const at::Tensor ids = field("ids", kIds, at::kLong, 1);
  const at::Tensor type_ids = field("type_ids", kTypeIds, at::kLong, 1);
  const at::Tensor attention = field("attention_mask", kAttentionMask, at::kLong, 1);
  const at::Tensor special = field("special_tokens_mask", kSpecialTokensMask, at::kLong, 1);
  const at::Tensor offsets = field("offsets", kOffsets, at::kLong, 2);
  const at::Tensor sequence = field("sequence_ids", kSequenceIds, at::kChar, 1);

  const int64_t rows = lengths.size(0);
  std::vector<tokenizer::Encoding> encodings(static_cast<size_t>(rows));
  const int64_t* length = lengths.data_ptr<int64_t>();
  size_t cursor[kFieldCount] = {};
  auto take = [&](const at::Tensor& t, Field f, auto& out, int64_t count) {
    using T = typename std::decay_t<decltype(out)>::value_type;
    const T* data = t.data_ptr<T>() + cursor[f];
    out.assign(data, data + count);
    cursor[f] += static_cast<size_t>(count);
  };
  for (auto& e : encodings) {
    take(ids, kIds, e.ids, length[kIds]);
    take(type_ids, kTypeIds, e.type_ids, length[kTypeIds]);
    take(attention, kAttentionMask, e.attention_mask, length[kAttentionMask]);
    take(special, kSpecialTokensMask, e.special_tokens_mask, length[kSpecialTokensMask]);
    take(sequence, kSequenceIds, e.sequence_ids, length[kSequenceIds]);
    const int64_t* pairs = offsets.data_ptr<int64_t>() + 2 * cursor[kOffsets];
    for (int64_t i = 0; i < length[kOffsets]; ++i)
      e.offsets.emplace_back(static_cast<size_t>(pairs[2 * i]), static_cast<size_t>(pairs[2 * i + 1]));
    cursor[kOffsets] += static_cast<size_t>(length[kOffsets]);
    length += kFieldCount;
  }
  return TokenizedDataset(std::move(encodings),
                          file.contains("labels") ? file.tensor("labels") : at::Tensor());
}

}  // namespace berth::data
