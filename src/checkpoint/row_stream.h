#pragma once
// Copies rows of a checkpoint's tensor from its files to a writer in bounded pieces, so the
// offline tools (reshard, consolidate) never hold a whole tensor: memory stays at one piece
// (at most kRowStreamBytes, or one row if a row is larger) plus one checksum block.
#include <cstdint>
#include <functional>
#include <string>

#include "checkpoint/shard_file.h"

namespace strider::checkpoint::detail {

inline constexpr uint64_t kRowStreamBytes = uint64_t{32} << 20;

// Rows [begin, end) of `key` (described by `rec`), read verified through `reader` and handed to
// `sink` in row-major order.
void stream_rows(VerifiedReader& reader, const std::string& key, const TensorRecord& rec, int64_t begin, int64_t end,
                 const std::function<void(const void*, size_t)>& sink);

}  // namespace strider::checkpoint::detail
