// The manifest every checkpoint carries (berth_manifest.json): each file's size and CRC-32C, so that a
// truncated or bit-flipped checkpoint is found before training resumes from it.
#pragma once

#include <string>

namespace berth::train {

// The manifest's file name inside a checkpoint directory (HF's loaders ignore files they do not know).
inline constexpr const char* kCheckpointManifestName = "berth_manifest.json";

// Writes dir/berth_manifest.json listing every regular file under dir (recursively, paths relative to dir,
// sorted), except the manifest itself, with its size and CRC-32C. Call it after the last file is written.
void write_checkpoint_manifest(const std::string& dir);

// What check_checkpoint found.
struct CheckpointCheck {
  enum class Status { Intact, NoManifest, Damaged };
  Status status = Status::Intact;
  // Damaged: the first file that differs and how ("model.safetensors has 1000 bytes, the manifest says
  // 1234"); NoManifest: why it counts as unchecked.
  std::string problem;
};

// Compares dir's files with its manifest: every listed file present with the listed size (all sizes first,
// which costs nothing), then every CRC-32C (reads each file once). Files the manifest does not list are
// ignored. A checkpoint without a manifest (written before berth kept one) is NoManifest.
CheckpointCheck check_checkpoint(const std::string& dir);

}  // namespace berth::train
