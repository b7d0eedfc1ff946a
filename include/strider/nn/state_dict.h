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
#include <vector>

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

// What load_state_dict returns: the model's keys the dict lacked and the dict's keys the model
// lacks (sorted), as PyTorch's load_state_dict returns them.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  bool empty() const { return missing_keys.empty() && unexpected_keys.empty(); }
};

// The end of every load_state_dict: with strict set and any key missing or unexpected, an
// Error from `op` naming `target` that lists every one of them and, when renaming would match
// them (a prefix to strip or add, as a wrapper's "module." or an enclosing module's name), says
// which; otherwise the keys, sorted.
IncompatibleKeys report_incompatible_keys(const std::string& op, const std::string& target,
                                          std::vector<std::string> missing, std::vector<std::string> unexpected,
                                          bool strict);
// The rename that makes the dict's unexpected keys the model's missing ones, if one prefix
// does: "strip the prefix 'module.'" or "add the prefix 'encoder.'"; empty when none does.
std::string suggest_key_rename(const std::vector<std::string>& missing, const std::vector<std::string>& unexpected);
// `state` with `prefix` removed from the keys that start with it (PyTorch's
// consume_prefix_in_state_dict_if_present), and with `prefix` put in front of every key.
std::map<std::string, Tensor> strip_key_prefix(const std::map<std::string, Tensor>& state, const std::string& prefix);
std::map<std::string, Tensor> add_key_prefix(const std::map<std::string, Tensor>& state, const std::string& prefix);

}  // namespace strider::nn
