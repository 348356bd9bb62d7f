// encode_in_parallel: threads claim inputs 16 at a time from one counter; the first error stops them.
#include "parallel_encode.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "berth/core/error.h"
#include "berth/core/runtime.h"

namespace berth::tokenizer {

std::vector<Encoding> encode_in_parallel(size_t count, size_t threads,
                                         const std::function<Encoding(size_t)>& encode) {
  std::vector<Encoding> out(count);
  if (threads == 0) threads = static_cast<size_t>(runtime::available_cpus());
  threads = std::max<size_t>(1, std::min(threads, count));
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(count);
  std::atomic<bool> failed{false};
  const auto work = [&] {
    constexpr size_t kChunk = 16;  // inputs claimed at a time: few atomic operations, still balanced
    for (;;) {
      const size_t begin = next.fetch_add(kChunk);
      if (begin >= count || failed.load(std::memory_order_relaxed)) return;
      const size_t end = std::min(begin + kChunk, count);
      for (size_t i = begin; i < end; ++i) {
        try {
          out[i] = encode(i);
        } catch (...) {
          errors[i] = std::current_exception();
          failed = true;
          return;
        }
      }
    }
  };
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& thread : pool) thread.join();
  }
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const Error& e) {
      BERTH_FAIL("input ", i, ": ", e.what());
    }
  }
  return out;
}

}  // namespace berth::tokenizer
