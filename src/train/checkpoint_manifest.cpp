// Checkpoint manifests: every file's size and CRC-32C written beside them, and checked before a resume.
#include "berth/train/checkpoint_manifest.h"
#include "berth/core/input_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "berth/core/atomic_file.h"
#include "berth/core/crc32c.h"
#include "berth/core/error.h"

namespace fs = std::filesystem;

namespace berth::train {
namespace {

using Json = nlohmann::json;

constexpr const char* kFormat = "berth checkpoint manifest";

struct ListedFile {
  std::string path;  // relative to the checkpoint
  uint64_t size = 0;
  std::string crc;  // crc32c_hex
};

// The manifest's entries, or a berth::Error naming what is malformed.
std::vector<ListedFile> parse_manifest(const std::string& manifest_path) {
  const Json json = Json::parse(
      read_input_file(manifest_path, "the checkpoint manifest", "resume from another checkpoint"));
  BERTH_CHECK(json.is_object() && json.value("format", "") == kFormat &&
                  json.value("checksum", "") == "crc32c" && json.contains("files") &&
                  json["files"].is_array(),
              "is not a berth checkpoint manifest with crc32c checksums");
  std::vector<ListedFile> files;
  for (const Json& entry : json["files"]) {
    ListedFile file;
    file.path = entry.at("path").get<std::string>();
    const Json& size = entry.at("size");
    BERTH_CHECK(size.is_number_unsigned(), "lists the size ", size.dump(), " for '", file.path,
                "', which is not a byte count");
    file.size = size.get<uint64_t>();
    file.crc = entry.at("crc32c").get<std::string>();
    BERTH_CHECK(
        !file.path.empty() && fs::path(file.path).is_relative() && file.path.find("..") == std::string::npos,
        "lists the path '", file.path, "', which is not inside the checkpoint");
    files.push_back(std::move(file));
  }
  return files;
}

// The first listed file that is missing or has another size, or "".
std::string size_problem(const std::string& dir, const std::vector<ListedFile>& files) {
  for (const ListedFile& file : files) {
    const fs::path path = fs::path(dir) / file.path;
    std::error_code error;
    const uintmax_t size = fs::file_size(path, error);
    if (error)
      return file.path + " is missing (the manifest lists it with " + std::to_string(file.size) + " bytes)";
    if (size != file.size)
      return file.path + " has " + std::to_string(size) + " bytes, the manifest says " +
             std::to_string(file.size) + (size < file.size ? " (truncated)" : " (it grew)");
  }
  return "";
}

// The first listed file whose CRC-32C differs, or "".
std::string checksum_problem(const std::string& dir, const std::vector<ListedFile>& files) {
  for (const ListedFile& file : files) {
    const FileChecksum sum = crc32c_file((fs::path(dir) / file.path).string());
    if (crc32c_hex(sum.crc32c) != file.crc)
      return file.path + " has CRC-32C " + crc32c_hex(sum.crc32c) + ", the manifest says " + file.crc +
             " (same size, " + std::to_string(sum.size) + " bytes: its content changed, e.g. a flipped bit)";
  }
  return "";
}

}  // namespace

void write_checkpoint_manifest(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), dir).generic_string();
    if (relative != kCheckpointManifestName) paths.push_back(relative);
  }
  std::sort(paths.begin(), paths.end());
  Json files = Json::array();
  for (const std::string& relative : paths) {
    const FileChecksum sum = crc32c_file((fs::path(dir) / relative).string());
    files.push_back({{"path", relative}, {"size", sum.size}, {"crc32c", crc32c_hex(sum.crc32c)}});
  }
  const Json manifest = {{"format", kFormat}, {"version", 1}, {"checksum", "crc32c"}, {"files", files}};
  write_file_atomically((fs::path(dir) / kCheckpointManifestName).string(), manifest.dump(2) + "\n");
}

CheckpointCheck check_checkpoint(const std::string& dir) {
  const std::string manifest_path = (fs::path(dir) / kCheckpointManifestName).string();
  CheckpointCheck check;
  std::error_code error;
  if (!fs::exists(manifest_path, error)) {
    check.status = CheckpointCheck::Status::NoManifest;
    check.problem =
        std::string("it has no ") + kCheckpointManifestName +
        " (written before berth kept manifests, or by another tool), so its files cannot be checked";
    return check;
  }
  std::vector<ListedFile> files;
  try {
    files = parse_manifest(manifest_path);
  } catch (const std::exception& e) {
    check.status = CheckpointCheck::Status::Damaged;
    check.problem = std::string(kCheckpointManifestName) + " is unreadable (" + e.what() + ")";
    return check;
  }
  check.problem = size_problem(dir, files);
  if (check.problem.empty()) check.problem = checksum_problem(dir, files);
  if (!check.problem.empty()) check.status = CheckpointCheck::Status::Damaged;
  return check;
}

}  // namespace berth::train
