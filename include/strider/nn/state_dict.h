#pragma once
// What kind of state dict a map of tensors is. A module's own state_dict() is full: every
// tensor whole, under its name. Wrappers that shard (FSDP) can also produce dicts holding only
// one rank's part; those carry a marker entry, so they cannot pass for a full checkpoint once
// saved, and loading one where a full dict is expected (or the reverse) is a clear error:
//   "_strider.state_dict"        int64 [kind, rank, world] (absent: full)
//   "_strider.shard.<name>"      int64 [row_offset, global_rows] for each sharded tensor: the
//                                entry <name> holds rows [row_offset, row_offset + its rows)
//                                of a tensor whose dim 0 is global_rows (other dims as stored)
#include <map>
#include <string>

#include "strider/core/tensor.h"

namespace strider::nn {

enum class StateDictKind {
  Full = 0,     // whole tensors (any rank can load it into any model)
  Sharded = 1,  // each rank's unpadded rows, with their place in the whole tensor
  Local = 2,    // each rank's padded local shards as its parameters hold them (same layout only)
};
const char* to_string(StateDictKind kind);

inline constexpr const char* kStateDictMarker = "_strider.state_dict";
inline constexpr const char* kShardEntryPrefix = "_strider.shard.";

struct StateDictOrigin {
  StateDictKind kind = StateDictKind::Full;
  int64_t rank = 0, world = 1;
};

// The kind of `state` from its marker (Full without one); a malformed marker is an Error.
StateDictOrigin state_dict_origin(const std::map<std::string, Tensor>& state);
// Adds the marker entry.
void mark_state_dict(std::map<std::string, Tensor>& state, StateDictOrigin origin);
// "a sharded state dict (rank 1 of 4)", "a full state dict", for messages.
std::string describe(const StateDictOrigin& origin);
// True for the marker and shard entries (not tensors of the model).
bool is_state_dict_metadata(const std::string& key);

}  // namespace strider::nn
