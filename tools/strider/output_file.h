#pragma once
// The files the strider command writes whole (ckpt consolidate's OUT, train --export-model): each
// is written beside its path and renamed onto it, and a rename replaces whatever is there, a FIFO,
// a symbolic link (not the file it points to) or a device node alike.
#include <string>

namespace strider::tools {

enum class ExistingOutput {
  Refused,             // ckpt consolidate, as ckpt reshard refuses an existing directory
  RegularFileReplaced  // train --export-model: each leg of a run rewrites the run's exported model (a
                       // safetensors file; any other file is refused)
};

// Throws strider::Error from `op` when `path` (given as `what`, e.g. "--export-model") lies inside
// a checkpoint directory (a directory, or one above it, holding a strider manifest), or exists and
// may not be replaced: anything but a regular file, any file under Refused, and under
// RegularFileReplaced a file that is not a safetensors file. The message names what is there and
// the fix.
void check_output_file(const char* op, const std::string& what, const std::string& path, ExistingOutput existing);

}  // namespace strider::tools
