// libFuzzer target: the torch-free state files of a checkpoint. The first input byte picks one, the rest is
// its content:
//   0: trainer_state.json (TrainerState): refused with a berth::Error, or read into a state whose JSON reads
//      back to the same JSON;
//   1: berth_manifest.json beside two files: check_checkpoint never throws, and an intact verdict is one the
//      resume check accepts;
//   2: the names of an output folder's entries, one a line: list_checkpoints gives steps in order,
//      rotation and "latest" resolution refuse with a berth::Error or name one of them.
// rng_state.pth, optimizer.pt and the ZeRO shards are safetensors files whose tensors need torch: their
// headers are safetensors_header_fuzzer's.
#include <filesystem>
#include <sstream>
#include <string>

#include "berth/core/error.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/checkpoint_manifest.h"
#include "berth/train/trainer_state.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kTarget = "checkpoint_state_fuzzer";
namespace fs = std::filesystem;
namespace train = berth::train;

void check_trainer_state(const std::string& text) {
  train::TrainerState state;
  try {
    state = train::TrainerState::from_json_text(text, "fuzz/trainer_state.json");
  } catch (const berth::Error&) {
    return;
  }
  const std::string written = state.to_json_text();
  const std::string again = train::TrainerState::from_json_text(written, "round trip").to_json_text();
  berth_fuzz::require(again == written, kTarget, "trainer_state.json reads back the same");
}

void check_manifest(const std::string& text, const std::string& dir) {
  fs::create_directories(dir + "/checkpoint-1");
  const std::string checkpoint = dir + "/checkpoint-1";
  berth_fuzz::write_file(checkpoint + "/model.safetensors", "abc");
  berth_fuzz::write_file(checkpoint + "/trainer_state.json", "{}\n");
  berth_fuzz::write_file(checkpoint + "/" + train::kCheckpointManifestName, text);
  const train::CheckpointCheck check = train::check_checkpoint(checkpoint);  // must not throw
  if (check.status != train::CheckpointCheck::Status::Intact) return;
  berth_fuzz::require(train::resolve_resume_checkpoint(dir, checkpoint) == checkpoint, kTarget,
                      "an intact checkpoint is resumed from");
}

// Entry names from the input's lines, each a folder holding a trainer_state.json; names that cannot be a
// file name are skipped.
void check_listing(const std::string& text, const std::string& dir) {
  std::istringstream lines(text);
  std::string name;
  while (std::getline(lines, name)) {
    if (name.empty() || name.size() > 120 || name == "." || name == ".." ||
        name.find_first_of(std::string("/\0", 2)) != std::string::npos)
      continue;
    fs::create_directories(dir + "/" + name);
    berth_fuzz::write_file(dir + "/" + name + "/trainer_state.json", "{}\n");
  }
  const auto listed = train::list_checkpoints(dir);
  for (size_t i = 0; i < listed.size(); ++i) {
    berth_fuzz::require(listed[i].first >= 0, kTarget, "steps are not negative");
    berth_fuzz::require(i == 0 || listed[i - 1].first <= listed[i].first, kTarget, "steps in order");
  }
  try {
    const std::string resumed = train::resolve_resume_checkpoint(dir, "latest");
    berth_fuzz::require(!listed.empty(), kTarget, "latest resolves only with a checkpoint");
  } catch (const berth::Error&) {
  }
  (void)train::remove_stale_temporaries(dir);
  (void)train::rotate_checkpoints(dir, 2, std::nullopt);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = berth_fuzz::text_of(data + 1, size - 1);
  if (data[0] % 3 == 0) {
    check_trainer_state(text);
    return 0;
  }
  const std::string dir = berth_fuzz::scratch_dir() + "/output";
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (data[0] % 3 == 1) {
    check_manifest(text, dir);
  } else {
    check_listing(text, dir);
  }
  return 0;
}
