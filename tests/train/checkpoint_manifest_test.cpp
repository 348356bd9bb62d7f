// Checkpoint manifests: every file's size and CRC-32C written with the checkpoint; a truncated file, a
// flipped bit, a missing file and a broken manifest are found; --resume_from_checkpoint latest falls back
// past a damaged checkpoint with a warning, a named damaged one is refused, one without a manifest resumes
// with a warning.
#include "berth/train/checkpoint_manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/core/atomic_file.h"
#include "berth/core/crc32c.h"
#include "berth/train/checkpoint_dir.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

// A checkpoint with a 4 KB weights file, a state file and a file in a subfolder (as ZeRO's shards are).
std::string manifest_checkpoint(const std::string& out, int64_t step) {
  return write_checkpoint_dir(out, step, [&](const std::string& tmp) {
    write_file_atomically(tmp + "/trainer_state.json", "{\"global_step\": " + std::to_string(step) + "}");
    write_file_atomically(tmp + "/model.safetensors", std::string(4096, static_cast<char>('a' + step % 20)));
    fs::create_directories(tmp + "/global_step" + std::to_string(step));
    write_file_atomically(tmp + "/global_step" + std::to_string(step) + "/shard.pt", "shard");
  });
}

void manifest_flip_bit(const std::string& path, std::streamoff at) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(at);
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  file.seekp(at);
  file.write(&byte, 1);
}

TEST(CheckpointManifest, ListsEveryFileWithItsSizeAndCrc32c) {
  TempDir dir;
  const std::string path = manifest_checkpoint(dir.path().string(), 3);
  std::ifstream in(path + "/" + kCheckpointManifestName);
  const nlohmann::json manifest = nlohmann::json::parse(in);
  EXPECT_EQ(manifest["checksum"], "crc32c");
  std::vector<std::string> listed;
  for (const auto& file : manifest["files"]) {
    listed.push_back(file["path"]);
    const FileChecksum sum = crc32c_file(path + "/" + file["path"].get<std::string>());
    EXPECT_EQ(file["size"].get<uint64_t>(), sum.size);
    EXPECT_EQ(file["crc32c"], crc32c_hex(sum.crc32c));
  }
  EXPECT_EQ(listed,
            (std::vector<std::string>{"global_step3/shard.pt", "model.safetensors", "trainer_state.json"}));
  EXPECT_EQ(check_checkpoint(path).status, CheckpointCheck::Status::Intact);
}

TEST(CheckpointManifest, FindsATruncatedFileAFlippedBitAMissingFileAndABrokenManifest) {
  TempDir dir;
  const std::string out = dir.path().string();
  const std::string truncated = manifest_checkpoint(out, 1);
  fs::resize_file(truncated + "/model.safetensors", 1000);
  CheckpointCheck check = check_checkpoint(truncated);
  EXPECT_EQ(check.status, CheckpointCheck::Status::Damaged);
  EXPECT_EQ(check.problem, "model.safetensors has 1000 bytes, the manifest says 4096 (truncated)");

  const std::string flipped = manifest_checkpoint(out, 2);
  const std::string crc_before = crc32c_hex(crc32c_file(flipped + "/model.safetensors").crc32c);
  manifest_flip_bit(flipped + "/model.safetensors", 2000);
  const std::string crc_after = crc32c_hex(crc32c_file(flipped + "/model.safetensors").crc32c);
  check = check_checkpoint(flipped);
  EXPECT_EQ(check.status, CheckpointCheck::Status::Damaged);
  EXPECT_EQ(check.problem, "model.safetensors has CRC-32C " + crc_after + ", the manifest says " +
                               crc_before +
                               " (same size, 4096 bytes: its content changed, e.g. a flipped bit)");

  const std::string missing = manifest_checkpoint(out, 3);
  fs::remove(missing + "/global_step3/shard.pt");
  EXPECT_EQ(check_checkpoint(missing).problem,
            "global_step3/shard.pt is missing (the manifest lists it with 5 bytes)");

  const std::string broken = manifest_checkpoint(out, 4);
  std::ofstream(broken + "/" + kCheckpointManifestName) << "{\"format\": ";
  check = check_checkpoint(broken);
  EXPECT_EQ(check.status, CheckpointCheck::Status::Damaged);
  expect_contains(check.problem, {"berth_manifest.json is unreadable"});

  const std::string old = manifest_checkpoint(out, 5);
  fs::remove(old + "/" + kCheckpointManifestName);
  EXPECT_EQ(check_checkpoint(old).status, CheckpointCheck::Status::NoManifest);
}

TEST(CheckpointManifest, LatestFallsBackPastDamagedCheckpointsWithAWarning) {
  TempDir dir;
  const std::string out = dir.path().string();
  manifest_checkpoint(out, 10);
  manifest_checkpoint(out, 20);
  manifest_checkpoint(out, 30);
  fs::resize_file(out + "/checkpoint-30/trainer_state.json", 3);
  manifest_flip_bit(out + "/checkpoint-20/model.safetensors", 0);
  std::vector<std::string> warnings;
  EXPECT_EQ(resolve_resume_checkpoint(out, "latest", &warnings), out + "/checkpoint-10");
  ASSERT_EQ(warnings.size(), 2u);
  expect_contains(warnings[0],
                  {"checkpoint " + out + "/checkpoint-30 is damaged (trainer_state.json has 3 bytes",
                   "falling back to an older checkpoint"});
  expect_contains(warnings[1], {out + "/checkpoint-20 is damaged (model.safetensors has CRC-32C"});

  fs::resize_file(out + "/checkpoint-10/model.safetensors", 0);
  const std::string message = error_text([&] { resolve_resume_checkpoint(out, "latest"); });
  expect_contains(message, {"--resume_from_checkpoint latest: every checkpoint in " + out + " is damaged",
                            out + "/checkpoint-10: model.safetensors has 0 bytes, the manifest says 4096",
                            "Fix: restore a checkpoint from a backup"});
}

TEST(CheckpointManifest, ANamedDamagedCheckpointIsRefusedAndOneWithoutAManifestWarns) {
  TempDir dir;
  const std::string out = dir.path().string();
  const std::string damaged = manifest_checkpoint(out, 10);
  fs::resize_file(damaged + "/model.safetensors", 4095);
  const std::string message = error_text([&] { resolve_resume_checkpoint(out, damaged); });
  EXPECT_EQ(message,
            "--resume_from_checkpoint " + damaged +
                ": the checkpoint is damaged: model.safetensors has 4095 bytes, the manifest says 4096 "
                "(truncated). Fix: resume from an older checkpoint (--resume_from_checkpoint latest "
                "takes the newest intact one), or restore the file from a backup");

  const std::string old = manifest_checkpoint(out, 20);
  fs::remove(old + "/" + kCheckpointManifestName);
  std::vector<std::string> warnings;
  EXPECT_EQ(resolve_resume_checkpoint(out, old, &warnings), old);
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0],
                  {"checkpoint " + old + ": it has no berth_manifest.json", "resuming from it unchecked"});
  warnings.clear();
  EXPECT_EQ(resolve_resume_checkpoint(out, "latest", &warnings), old);
  EXPECT_EQ(warnings.size(), 1u);
}

// Found by fuzz/checkpoint_state_fuzzer: a manifest size written as a float beyond 2^64 was converted to
// uint64_t (undefined behaviour, UBSan's "outside the range of representable values"); now the manifest is
// unreadable, so the checkpoint counts as damaged.
TEST(CheckpointManifest, ASizeThatIsNotAByteCountMakesTheManifestUnreadable) {
  TempDir dir;
  const std::string checkpoint = manifest_checkpoint(dir.path().string(), 1);
  std::ofstream(checkpoint + "/" + kCheckpointManifestName)
      << R"({"format": "berth checkpoint manifest", "version": 1, "checksum": "crc32c", "files": )"
      << R"([{"path": "model.safetensors", "size": 1.8446744073709552e19, "crc32c": "00000000"}]})";
  const CheckpointCheck check = check_checkpoint(checkpoint);
  EXPECT_EQ(check.status, CheckpointCheck::Status::Damaged);
  expect_contains(check.problem, {"berth_manifest.json is unreadable",
                                  "for 'model.safetensors', which is not a byte count"});
}

}  // namespace
}  // namespace berth::train
