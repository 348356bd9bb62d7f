// libFuzzer target: JSONL, CSV and TSV datasets as TextDataset reads them. The first input byte picks the
// format, the problem type, whether a text pair and a label are read; the rest is the file. Any input is
// refused with a berth::Error or read into examples that write_jsonl writes and TextDataset reads back equal.
#include <string>
#include <string_view>

#include "berth/core/error.h"
#include "berth/data/delimited_reader.h"
#include "berth/data/text_dataset.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kTarget = "dataset_rows_fuzzer";
using berth::data::ProblemType;
using berth::data::TextDataset;
using berth::data::TextDatasetOptions;
using berth::data::TextFormat;

TextDatasetOptions options_from(uint8_t choice) {
  TextDatasetOptions options;
  options.format = choice % 3 == 0 ? TextFormat::Jsonl : choice % 3 == 1 ? TextFormat::Csv : TextFormat::Tsv;
  const int problem = (choice / 3) % 3;
  options.problem_type = problem == 0   ? ProblemType::SingleLabel
                         : problem == 1 ? ProblemType::MultiLabel
                                        : ProblemType::Regression;
  if ((choice / 9) % 2) options.text_pair_column = "text_pair";
  options.labeled = (choice / 18) % 2 == 0;
  return options;
}

void check_records(std::string_view content) {
  for (const auto quoting : {berth::data::Quoting::Rfc4180, berth::data::Quoting::None}) {
    try {
      const auto records = berth::data::parse_delimited(
          content, quoting == berth::data::Quoting::None ? '\t' : ',', quoting, "fuzz");
      size_t line = 0;
      for (const auto& record : records) {
        berth_fuzz::require(record.line > line && !record.fields.empty(), kTarget,
                            "records start on later lines and hold a field");
        line = record.line;
      }
    } catch (const berth::Error&) {
    }
  }
}

void check_round_trip(const TextDataset& dataset, TextDatasetOptions options) {
  const std::string path = berth_fuzz::scratch_dir() + "/again.jsonl";
  berth::data::write_jsonl(path, dataset.examples(), dataset.label_map(), dataset.problem_type());
  options.format = TextFormat::Jsonl;
  options.label_map = dataset.label_map();
  const TextDataset again = TextDataset::load(path, options);
  berth_fuzz::require(again.size() == dataset.size(), kTarget, "every example survives a round trip");
  for (size_t i = 0; i < again.size(); ++i) {
    const auto& a = again[i];
    const auto& b = dataset[i];
    berth_fuzz::require(a.text == b.text && a.text_pair == b.text_pair, kTarget,
                        "texts survive a round trip");
    if (!options.labeled) continue;
    berth_fuzz::require(a.label == b.label && a.labels == b.labels, kTarget, "labels survive a round trip");
    berth_fuzz::require(a.value == b.value, kTarget, "regression targets survive a round trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const TextDatasetOptions options = options_from(data[0]);
  const std::string content = berth_fuzz::text_of(data + 1, size - 1);
  check_records(content);
  const char* extension = options.format == TextFormat::Jsonl ? "/data.jsonl"
                          : options.format == TextFormat::Csv ? "/data.csv"
                                                              : "/data.tsv";
  const std::string path = berth_fuzz::scratch_dir() + extension;
  berth_fuzz::write_file(path, content);
  std::optional<TextDataset> dataset;
  try {
    dataset.emplace(TextDataset::load(path, options));
  } catch (const berth::Error&) {
    return 0;
  }
  check_round_trip(*dataset, options);
  return 0;
}
