#pragma once
// The file-system steps that make a save atomic (run_directory.h describes the layout).
#include <cstdint>
#include <set>
#include <string>

namespace strider::checkpoint::detail {

// Where the save of `step` writes until it commits: run_dir/.pending-checkpoint-<step>.
std::string pending_dir(const std::string& run_dir, int64_t step);
bool has_pending_saves(const std::string& run_dir);
// dir/name holds `text` or (after a crash) its previous content, never a mix: temporary, fsync,
// rename, fsync of the directory.
void write_file_atomically(const std::string& dir, const std::string& name, const std::string& text);
// Removes from `pending` every file not in `keep` (leftovers of an earlier killed save of the
// same step), then renames it to `final_dir` in one step (swapping out a checkpoint already
// there, which is then removed).
void commit_pending(const std::string& run_dir, const std::string& pending, const std::string& final_dir,
                    const std::set<std::string>& keep);
// After a commit: removes other pending saves and all but the newest keep_last committed
// checkpoints (keep_last 0: keeps all).
void clean_run_directory(const std::string& run_dir, int keep_last);

}  // namespace strider::checkpoint::detail
