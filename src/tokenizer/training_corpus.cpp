// Training corpora in, vocab.txt and tokenizer_config.json out.
#include "berth/tokenizer/training_corpus.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/tokenizer/tokenizer_files.h"

namespace berth::tokenizer {
namespace {

bool is_jsonl(const std::string& path) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".jsonl") || ends_with(".ndjson");
}

}  // namespace

void for_each_training_text(const std::string& path, const std::function<void(std::string_view)>& visit,
                            TextLines lines) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in.good(), path, ": cannot open (", std::strerror(errno), "). Fix: check the --input path");
  const bool jsonl = is_jsonl(path);
  std::string line;
  size_t number = 1;
  // A document the splitter refuses (text that is not UTF-8) is named by its file and line.
  const auto visit_line = [&](std::string_view text) {
    try {
      visit(text);
    } catch (const Error& e) {
      BERTH_FAIL(path, ":", number, ": ", e.what());
    }
  };
  for (; std::getline(in, line); ++number) {
    if (!jsonl && lines == TextLines::WithEndings) {
      if (!in.eof()) line += '\n';  // getline stopped at a line break, not at the end of the file
      visit_line(line);
      continue;
    }
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (!jsonl) {
      visit_line(line);
      continue;
    }
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      BERTH_FAIL(path, ":", number, ": malformed JSON (", e.what(),
                 "). Fix: each line of a .jsonl corpus must be an object such as {\"text\": \"...\"}");
    }
    BERTH_CHECK(
        object.is_object() && object.contains("text") && object["text"].is_string(), path, ":", number,
        ": expected an object with a string \"text\", found ", object.dump().substr(0, 80),
        ". Fix: write each document as {\"text\": \"...\"}, or pass a plain text file (one document per "
        "line)");
    visit_line(object["text"].get_ref<const std::string&>());
  }
  BERTH_CHECK(!in.bad(), path, ": reading failed. Fix: check the file");
}

std::unordered_map<std::string, uint64_t> count_training_words(const std::vector<std::string>& paths,
                                                               const WordSplitter& split, TextLines lines) {
  std::unordered_map<std::string, uint64_t> counts;
  std::vector<std::string> words;
  for (const std::string& path : paths) {
    for_each_training_text(
        path,
        [&](std::string_view text) {
          words.clear();
          split(text, words);
          for (std::string& word : words) ++counts[std::move(word)];
        },
        lines);
  }
  return counts;
}

void write_wordpiece_files(const std::string& dir, const std::vector<std::string>& vocab, bool lowercase,
                           int64_t model_max_length) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  BERTH_CHECK(!error, dir, ": cannot create the folder (", error.message(),
              "). Fix: choose a writable --output");
  for (const std::string& token : vocab)
    BERTH_CHECK(token.find('\n') == std::string::npos && token.find('\r') == std::string::npos,
                "vocab token '", token,
                "' holds a line break, which vocab.txt cannot store. Fix: remove line "
                "breaks from the special tokens");
  const auto has = [&](const char* token) {
    return std::find(vocab.begin(), vocab.end(), token) != vocab.end();
  };
  write_file_atomically(dir + "/vocab.txt", [&](std::ostream& out) {
    for (const std::string& token : vocab) out << token << '\n';
  });
  nlohmann::ordered_json config;
  config["tokenizer_class"] = "BertTokenizer";
  config["do_lower_case"] = lowercase;
  config["model_max_length"] = model_max_length;
  // The special tokens BERT's tokenizer expects, when the vocabulary has them.
  for (const auto& [key, token] :
       std::vector<std::pair<std::string, const char*>>{{"unk_token", "[UNK]"},
                                                        {"sep_token", "[SEP]"},
                                                        {"pad_token", "[PAD]"},
                                                        {"cls_token", "[CLS]"},
                                                        {"mask_token", "[MASK]"}}) {
    if (has(token)) config[key] = token;
  }
  write_file_atomically(dir + "/tokenizer_config.json",
                        [&](std::ostream& out) { out << config.dump(2) << '\n'; });
  // BERT's usual specials: tokenizer.json too, as transformers would build it from these two files.
  if (has("[UNK]") && has("[SEP]") && has("[PAD]") && has("[CLS]") && has("[MASK]"))
    save_tokenizer(load_tokenizer(dir), dir);
}

}  // namespace berth::tokenizer
