// Checkpoint directories in HF's layout (output_dir/checkpoint-<global_step>/): written whole or not at all,
// listed, rotated (save_total_limit) and resolved for --resume_from_checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace berth::train {

// "checkpoint-<step>", the directory name HF's Trainer uses (PREFIX_CHECKPOINT_DIR).
std::string checkpoint_dir_name(int64_t step);

// Creates a fresh output_dir/.tmp-checkpoint-<step>-<random>/ (and output_dir itself when missing), calls
// write_files(tmp_dir) to fill it, fsyncs every file in it and the directory, then renames it to
// output_dir/checkpoint-<step> and fsyncs output_dir. An existing checkpoint-<step> (a re-save at the same
// step) is moved aside first and removed after the rename. When write_files throws, the temporary directory
// is removed and the exception propagates: the checkpoints already there are untouched. Before the fsync it
// writes the checkpoint's manifest (checkpoint_manifest.h: every file's size and CRC-32C). A failure that
// found the disk full becomes a berth::Error naming the path, the bytes needed (expected_bytes, or the newest
// checkpoint's size when larger) and the bytes free (disk_full.h). Returns the final path. Call it from one
// process only (rank 0).
std::string write_checkpoint_dir(const std::string& output_dir, int64_t step,
                                 const std::function<void(const std::string& tmp_dir)>& write_files,
                                 uint64_t expected_bytes = 0);

// Several processes save one checkpoint (ZeRO: each rank its shard). Rank 0 creates a staging directory
// output_dir/.tmp-checkpoint-<step>-shards-<random>/ (a .tmp-* name: a crash leaves nothing
// remove_stale_temporaries would not clean), every rank writes into it, then rank 0's write_checkpoint_dir
// moves its contents into the checkpoint with move_directory_contents. output_dir must be shared by the ranks
// (as DeepSpeed and HF assume).
std::string create_staging_dir(const std::string& output_dir, int64_t step);
// Renames every entry of `from` into `to` (same file system), then removes `from`.
void move_directory_contents(const std::string& from, const std::string& to);

// The complete checkpoints of output_dir as (step, path), sorted by step. Ignores .tmp-* directories (a save
// in progress or one a crash interrupted) and anything not named checkpoint-<digits>. A missing output_dir
// has none.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& output_dir);

// The checkpoint with the highest step, if any.
std::optional<std::string> latest_checkpoint(const std::string& output_dir);

// Removes the .tmp-checkpoint-* directories a crash left in output_dir; returns their paths. Call it before
// training starts, from one process only, never while another process saves into output_dir.
std::vector<std::string> remove_stale_temporaries(const std::string& output_dir);

// HF's checkpoint rotation as Trainer._save_checkpoint runs it (transformers 5.x:
// trainer_utils.rotate_checkpoints over sort_checkpoints with use_mtime=True): the checkpoints sorted by
// modification time (ties by path), or by step when their times span less than a second; the most recent
// one and the best one (when given) are never deleted; the others are deleted oldest first until
// save_total_limit are left, or only the protected ones (2 when the best is not the most recent). Only
// checkpoint-<digits> directories take part (list_checkpoints). save_total_limit <= 0 means unlimited.
// Returns the removed paths, in the order they were removed.
std::vector<std::string> rotate_checkpoints(const std::string& output_dir, int64_t save_total_limit,
                                            const std::optional<std::string>& best_checkpoint);

// The checkpoint to resume from, checked against its manifest (check_checkpoint). value "latest" (or "true",
// as HF's CLI takes it) means the newest intact checkpoint of output_dir: a damaged newer one is skipped with
// a warning naming it and what differs (berth::Error naming output_dir and what it holds when there is
// none, or naming every damaged one when none is intact). Any other value is a checkpoint path, checked to be
// a directory holding trainer_state.json; a damaged one is refused (berth::Error naming the file and what
// differs). A checkpoint without a manifest (written before berth kept them) is taken with a warning.
// Warnings are appended to *warnings when given.
std::string resolve_resume_checkpoint(const std::string& output_dir, const std::string& value,
                                      std::vector<std::string>* warnings = nullptr);

}  // namespace berth::train
