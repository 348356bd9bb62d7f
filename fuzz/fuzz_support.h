// What every libFuzzer target shares: the broken-promise trap, the input as text and a scratch folder for the
// parsers that read files.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace berth_fuzz {

// A broken promise is a crash the fuzzer records, with the reason on stderr.
inline void require(bool ok, const char* target, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "%s: accepted input breaks: %s\n", target, what);
  __builtin_trap();
}

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A folder of this process's own (in /dev/shm when there is one: each input is written there), emptied for
// every input by the caller writing the files it needs.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path path = base / ("berth_fuzz_" + std::to_string(getpid()));
    fs::create_directories(path);
    return path.string();
  }();
  return dir;
}

inline void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// Splits the input at the first occurrence of `separator`: the part before and the part after (empty when
// the separator is absent), so one input can hold two files.
inline std::pair<std::string_view, std::string_view> split_two(std::string_view input,
                                                               std::string_view separator) {
  const size_t at = input.find(separator);
  if (at == std::string_view::npos) return {input, {}};
  return {input.substr(0, at), input.substr(at + separator.size())};
}

}  // namespace berth_fuzz
