// libFuzzer target: a tokenizer directory without tokenizer.json, as load_tokenizer reads it: vocab.txt
// (BERT's WordPiece set-up) and tokenizer_config.json. The input is vocab.txt, then after a byte 0x1E
// (ASCII's record separator) tokenizer_config.json (none without one). Any input is refused with a
// berth::Error, or makes a tokenizer that encodes and decodes (tokenizer_checks.h) and that save_tokenizer
// writes and load_tokenizer reads back with the same vocabulary and encodings.
#include <filesystem>
#include <string>

#include "berth/core/error.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "tokenizer_checks.h"

namespace {

constexpr const char* kTarget = "vocab_files_fuzzer";
namespace fs = std::filesystem;
using berth::tokenizer::Tokenizer;

void check_saved(const Tokenizer& tokenizer, const std::string& dir) {
  berth::tokenizer::save_tokenizer(tokenizer, dir);
  const Tokenizer again = berth::tokenizer::load_tokenizer(dir);
  berth_fuzz::require(again.model_tokens() == tokenizer.model_tokens(), kTarget,
                      "the vocabulary survives save and load");
  berth_fuzz::require(again.model_max_length == tokenizer.model_max_length, kTarget,
                      "model_max_length survives save and load");
  for (const char* text : {"Hello, world!", "na\xc3\xafve [MASK] tokens"}) {
    std::vector<int64_t> ids, again_ids;
    try {
      ids = tokenizer.encode(text).ids;
    } catch (const berth::Error&) {
      continue;
    }
    again_ids = again.encode(text).ids;
    berth_fuzz::require(ids == again_ids, kTarget, "encodings survive save and load");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = berth_fuzz::text_of(data, size);
  const std::string dir = berth_fuzz::scratch_dir() + "/tokenizer";
  const std::string saved = berth_fuzz::scratch_dir() + "/saved";
  fs::remove_all(dir);
  fs::remove_all(saved);
  fs::create_directories(dir);
  const size_t nul = input.find('\x1e');
  berth_fuzz::write_file(dir + "/vocab.txt", input.substr(0, nul));
  if (nul != std::string::npos) berth_fuzz::write_file(dir + "/tokenizer_config.json", input.substr(nul + 1));
  std::optional<Tokenizer> tokenizer;
  try {
    tokenizer.emplace(berth::tokenizer::load_tokenizer(dir));
  } catch (const berth::Error&) {
    return 0;
  }
  berth_fuzz::exercise_tokenizer(*tokenizer);
  check_saved(*tokenizer, saved);
  return 0;
}
