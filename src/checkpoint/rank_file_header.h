#pragma once
// A rank file's own safetensors header, checked against the manifest that points into it.
// The manifest's checksum only proves the manifest is the one that was sealed; a re-sealed one
// could still send a tensor to other checksummed bytes of the same size (another tensor, the
// other rank's file). The header, read anyway when the file is opened, says what each byte range
// really holds: the name, dtype and shape of each piece, where it lies, and (recorded since
// the row metadata was added) which rows of the whole tensor it is.
#include <cstdint>
#include <string>
#include <vector>

#include "strider/checkpoint/manifest.h"

namespace strider::checkpoint::detail {

// The metadata entry naming the rows of the whole tensor a rank file's piece `key` holds; its
// value is "<row_begin>,<row_end>". Files from before it was written have none and still load.
std::string rows_metadata_key(const std::string& key);
std::string rows_metadata_value(int64_t row_begin, int64_t row_end);

// One shard of the manifest, as a file holds it.
struct ShardInFile {
  const std::string* key = nullptr;
  const TensorRecord* tensor = nullptr;
  const ShardRecord* shard = nullptr;
};

// Every file's shards (index: the manifest's file index); the manifest must outlive the result.
std::vector<std::vector<ShardInFile>> shards_by_file(const Manifest& manifest);

// Checks that `header` (the first file.header_bytes bytes of the file at `path`, already verified
// against the manifest's block checksums) lists exactly `shards`: each under its tensor's key,
// with its dtype, the shape of its rows, its byte offset and, when the file records it, its row
// range; and nothing else. Throws strider::Error naming the file, the tensor and both values.
void check_rank_file_header(const std::string& path, const FileRecord& file, const std::vector<ShardInFile>& shards,
                            const std::string& header);

}  // namespace strider::checkpoint::detail
