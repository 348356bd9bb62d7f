// Reading a corpus for vocabulary training (plain text or JSONL) and writing the trained vocabulary's files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace berth::tokenizer {

// How the lines of a plain text file become documents.
enum class TextLines {
  Trimmed,      // each line that is not blank, without its line ending (nor a UTF-8 BOM)
  WithEndings,  // every line with its line ending, as HF's Tokenizer.train(files) reads them (byte-level BPE
                // learns line breaks as tokens)
};

// Calls `visit(text)` for every document of `path`: the lines of a plain text file as `lines` says, or the
// "text" field of each line of a .jsonl/.ndjson file. A JSONL line that is not an object with a string "text"
// throws berth::Error "<path>:<line>: ..." with the fix; so does a file that cannot be read.
void for_each_training_text(const std::string& path, const std::function<void(std::string_view)>& visit,
                            TextLines lines = TextLines::Trimmed);

// Splits a document into words (normalised and pre-tokenised, as the tokenizer will see them).
using WordSplitter = std::function<void(std::string_view text, std::vector<std::string>& words)>;

// How often each word occurs in all `paths`, as HF's trainer counts them before training.
std::unordered_map<std::string, uint64_t> count_training_words(const std::vector<std::string>& paths,
                                                               const WordSplitter& split,
                                                               TextLines lines = TextLines::Trimmed);

// Writes `dir`/vocab.txt (one token per line, in id order) and `dir`/tokenizer_config.json (BertTokenizer
// with do_lower_case, the special tokens found in the vocab, model_max_length), each through a temporary file
// and a rename; creates `dir` if needed.
void write_wordpiece_files(const std::string& dir, const std::vector<std::string>& vocab, bool lowercase,
                           int64_t model_max_length = 512);

}  // namespace berth::tokenizer
