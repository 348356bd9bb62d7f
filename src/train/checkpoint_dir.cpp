// Checkpoint directories: fill a fresh temporary directory, fsync it, rename it into place; list, rotate,
// resolve.
#include "berth/train/checkpoint_dir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "berth/core/error.h"
#include "berth/train/checkpoint_manifest.h"
#include "berth/train/disk_full.h"

namespace fs = std::filesystem;

namespace berth::train {
namespace {

constexpr const char* kPrefix = "checkpoint-";
constexpr const char* kTempPrefix = ".tmp-checkpoint-";

std::string errno_text() { return std::strerror(errno); }

// Flushes a file's or a directory's own entry to disk; a directory's fsync makes the names in it durable.
void fsync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  BERTH_CHECK(fd >= 0, path, ": cannot open it to flush it to disk (", errno_text(),
              "). Fix: check the permissions of the output directory");
  const bool synced = ::fsync(fd) == 0;
  const std::string reason = errno_text();
  ::close(fd);
  BERTH_CHECK(synced, path, ": flushing it to disk failed (", reason, "). Fix: check free space");
}

void fsync_tree(const std::string& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) fsync_path(entry.path().string(), false);
    if (entry.is_directory()) fsync_path(entry.path().string(), true);
  }
  fsync_path(dir, true);
}

// The step of a directory named checkpoint-<digits>, or nothing.
std::optional<int64_t> step_of(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

std::string make_temp_dir(const std::string& output_dir, const std::string& tag) {
  std::string pattern = (fs::path(output_dir) / (kTempPrefix + tag + "-XXXXXX")).string();
  BERTH_CHECK(::mkdtemp(pattern.data()) != nullptr, output_dir,
              ": cannot create a temporary checkpoint directory (", errno_text(),
              "). Fix: make sure the output directory is writable and has free space");
  return pattern;
}

void remove_quietly(const std::string& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

// What output_dir holds, for error messages: a few names, or why there are none.
std::string describe_contents(const std::string& output_dir) {
  std::error_code error;
  if (!fs::exists(output_dir, error)) return "it does not exist";
  if (!fs::is_directory(output_dir, error)) return "it is not a directory";
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(output_dir, error))
    names.push_back(entry.path().filename().string() + (entry.is_directory() ? "/" : ""));
  if (names.empty()) return "it is empty";
  std::sort(names.begin(), names.end());
  std::string text = "it holds ";
  const size_t shown = std::min<size_t>(names.size(), 8);
  for (size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
  return text;
}

bool same_path(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
}

// A path's modification time in seconds since the epoch, as Python's os.path.getmtime gives it (st_mtime:
// seconds + nanoseconds * 1e-9, a double); nothing when it cannot be read.
std::optional<double> mtime_seconds(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
}

// The checkpoints in the order HF's Trainer rotates them (transformers 5.x: trainer_utils.sort_checkpoints
// with use_mtime=True): oldest modification time first, ties by path; when the times span less than a
// second HF takes them as unreliable ("mtime may not be reliable on this filesystem") and sorts by step,
// ties by path. A time that cannot be read (a checkpoint removed meanwhile) also means by step.
std::vector<std::string> sorted_for_rotation(const std::string& output_dir) {
  const std::vector<std::pair<int64_t, std::string>> by_step = list_checkpoints(output_dir);
  std::vector<std::pair<double, std::string>> by_mtime;
  for (const auto& [step, path] : by_step) {
    const std::optional<double> mtime = mtime_seconds(path);
    if (!mtime) break;
    by_mtime.emplace_back(*mtime, path);
  }
  std::sort(by_mtime.begin(), by_mtime.end());
  std::vector<std::string> sorted;
  if (by_mtime.size() == by_step.size() && by_mtime.size() > 1 &&
      by_mtime.back().first - by_mtime.front().first >= 1.0) {
    for (const auto& [mtime, path] : by_mtime) sorted.push_back(path);
  } else {
    for (const auto& [step, path] : by_step) sorted.push_back(path);
  }
  return sorted;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) { return kPrefix + std::to_string(step); }

std::string write_checkpoint_dir(const std::string& output_dir, int64_t step,
                                 const std::function<void(const std::string& tmp_dir)>& write_files,
                                 uint64_t expected_bytes) {
  BERTH_CHECK(step >= 0, "a checkpoint's step must be 0 or more, found ", step,
              ". Fix: pass the global step (state.global_step)");
  std::error_code error;
  fs::create_directories(output_dir, error);
  BERTH_CHECK(!error && fs::is_directory(output_dir), output_dir, ": cannot create the output directory (",
              error ? error.message() : "a file is in the way", "). Fix: pass a writable --output_dir");

  const std::string final_path = (fs::path(output_dir) / checkpoint_dir_name(step)).string();
  const std::string temp = make_temp_dir(output_dir, std::to_string(step));
  std::string aside;
  try {
    write_files(temp);
    write_checkpoint_manifest(temp);
    fsync_tree(temp);
    if (fs::exists(final_path)) {
      // rename() cannot replace a non-empty directory: move the old one aside (still a .tmp-* name, so a
      // crash right here leaves the older checkpoints as the latest and remove_stale_temporaries cleans it
      // up).
      aside = make_temp_dir(output_dir, std::to_string(step) + "-old");
      BERTH_CHECK(::rename(final_path.c_str(), aside.c_str()) == 0, final_path,
                  ": cannot move the previous save at this step aside (", errno_text(),
                  "). Fix: check the permissions of the output directory");
    }
    BERTH_CHECK(::rename(temp.c_str(), final_path.c_str()) == 0, final_path, ": cannot move ", temp,
                " into place (", errno_text(), "). Fix: check the permissions of the output directory");
  } catch (...) {
    // What this save needs, for a disk-full message: the caller's estimate, what the newest checkpoint
    // takes, or at least what was written before the failure.
    const std::optional<std::string> newest = latest_checkpoint(output_dir);
    const uint64_t needed =
        std::max({expected_bytes, bytes_on_disk(temp), newest ? bytes_on_disk(*newest) : uint64_t{0}});
    remove_quietly(temp);
    if (!aside.empty() && !fs::exists(final_path)) ::rename(aside.c_str(), final_path.c_str());
    if (!aside.empty()) remove_quietly(aside);
    rethrow_as_disk_full(final_path, checkpoint_dir_name(step), needed);
  }
  fsync_path(output_dir, true);
  if (!aside.empty()) remove_quietly(aside);
  return final_path;
}

std::string create_staging_dir(const std::string& output_dir, int64_t step) {
  std::error_code error;
  fs::create_directories(output_dir, error);
  BERTH_CHECK(!error && fs::is_directory(output_dir), output_dir, ": cannot create the output directory (",
              error ? error.message() : "a file is in the way", "). Fix: pass a writable --output_dir");
  return make_temp_dir(output_dir, std::to_string(step) + "-shards");
}

void move_directory_contents(const std::string& from, const std::string& to) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(from, error)) {
    const fs::path target = fs::path(to) / entry.path().filename();
    BERTH_CHECK(::rename(entry.path().c_str(), target.c_str()) == 0, "cannot move ", entry.path().string(),
                " to ", target.string(), " (", errno_text(),
                "). Fix: keep the output directory on one file system, shared by every rank");
  }
  BERTH_CHECK(!error, from, ": cannot list this staging directory (", error.message(), ")");
  remove_quietly(from);
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& output_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  if (!fs::is_directory(output_dir, error)) return found;
  for (const auto& entry : fs::directory_iterator(output_dir, error)) {
    if (!entry.is_directory()) continue;
    if (auto step = step_of(entry.path().filename().string()))
      found.emplace_back(*step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<std::string> latest_checkpoint(const std::string& output_dir) {
  auto found = list_checkpoints(output_dir);
  if (found.empty()) return std::nullopt;
  return found.back().second;
}

std::vector<std::string> remove_stale_temporaries(const std::string& output_dir) {
  std::vector<std::string> removed;
  std::error_code error;
  if (!fs::is_directory(output_dir, error)) return removed;
  for (const auto& entry : fs::directory_iterator(output_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind(kTempPrefix, 0) == 0) removed.push_back(entry.path().string());
  }
  std::sort(removed.begin(), removed.end());
  for (const auto& path : removed) {
    fs::remove_all(path, error);
    BERTH_CHECK(!error, path, ": cannot remove this leftover of an interrupted checkpoint save (",
                error.message(), "). Fix: remove it by hand");
  }
  return removed;
}

std::vector<std::string> rotate_checkpoints(const std::string& output_dir, int64_t save_total_limit,
                                            const std::optional<std::string>& best_checkpoint) {
  // transformers 5.x trainer_utils.rotate_checkpoints: the most recent checkpoint (to resume from) and the
  // best one are never deleted; the others go, oldest first, until save_total_limit are left (or the two
  // protected ones).
  if (save_total_limit <= 0) return {};
  const std::vector<std::string> sorted = sorted_for_rotation(output_dir);
  if (static_cast<int64_t>(sorted.size()) <= save_total_limit) return {};
  const std::string& most_recent = sorted.back();
  const bool best_elsewhere = best_checkpoint && !same_path(*best_checkpoint, most_recent);
  const int64_t keep = std::max<int64_t>(save_total_limit, best_elsewhere ? 2 : 1);
  int64_t remaining = static_cast<int64_t>(sorted.size());
  std::vector<std::string> removed;
  for (const std::string& path : sorted) {
    if (remaining <= keep) break;
    if (path == most_recent || (best_checkpoint && same_path(path, *best_checkpoint))) continue;
    remove_quietly(path);
    removed.push_back(path);
    --remaining;
  }
  return removed;
}

namespace {

// The newest checkpoint whose files match its manifest; damaged newer ones are skipped with a warning.
std::string newest_intact_checkpoint(const std::string& output_dir, const std::string& value,
                                     std::vector<std::string>* warnings) {
  const auto found = list_checkpoints(output_dir);
  BERTH_CHECK(
      !found.empty(), "--resume_from_checkpoint ", value, ": expected a checkpoint-<step> directory in ",
      output_dir, ", found none (", describe_contents(output_dir),
      "). Fix: check --output_dir, pass a checkpoint path, or start without --resume_from_checkpoint");
  std::string damaged;
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    const CheckpointCheck check = check_checkpoint(it->second);
    if (check.status == CheckpointCheck::Status::Damaged) {
      damaged += (damaged.empty() ? "" : "; ") + it->second + ": " + check.problem;
      if (warnings)
        warnings->push_back("checkpoint " + it->second + " is damaged (" + check.problem +
                            "): falling back to an older checkpoint");
      continue;
    }
    if (check.status == CheckpointCheck::Status::NoManifest && warnings)
      warnings->push_back("checkpoint " + it->second + ": " + check.problem + "; resuming from it unchecked");
    return it->second;
  }
  BERTH_FAIL("--resume_from_checkpoint ", value, ": every checkpoint in ", output_dir, " is damaged (",
             damaged,
             "). Fix: restore a checkpoint from a backup, or start without --resume_from_checkpoint");
}

}  // namespace

std::string resolve_resume_checkpoint(const std::string& output_dir, const std::string& value,
                                      std::vector<std::string>* warnings) {
  if (value == "latest" || value == "true" || value == "True")
    return newest_intact_checkpoint(output_dir, value, warnings);
  std::error_code error;
  BERTH_CHECK(fs::exists(value, error), "--resume_from_checkpoint ", value,
              ": expected a checkpoint directory, found nothing at that path. Fix: pass an existing "
              "checkpoint-<step> directory, or \"latest\" for the newest one in --output_dir");
  BERTH_CHECK(fs::is_directory(value, error), "--resume_from_checkpoint ", value,
              ": expected a checkpoint directory, found a file. Fix: pass its checkpoint-<step> directory");
  BERTH_CHECK(fs::is_regular_file(fs::path(value) / "trainer_state.json", error), "--resume_from_checkpoint ",
              value, ": expected a checkpoint holding trainer_state.json, found none (",
              describe_contents(value),
              "). Fix: pass a complete checkpoint-<step> directory written by the trainer");
  const CheckpointCheck check = check_checkpoint(value);
  BERTH_CHECK(
      check.status != CheckpointCheck::Status::Damaged, "--resume_from_checkpoint ", value,
      ": the checkpoint is damaged: ", check.problem,
      ". Fix: resume from an older checkpoint (--resume_from_checkpoint latest takes the newest intact "
      "one), or restore the file from a backup");
  if (check.status == CheckpointCheck::Status::NoManifest && warnings)
    warnings->push_back("checkpoint " + value + ": " + check.problem + "; resuming from it unchecked");
  return value;
}

}  // namespace berth::train
