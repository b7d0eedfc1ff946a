#pragma once
// Checks that every rank holds the same description of something (a model's structure, a
// wrapper's options, a trainer's configuration), before the ranks act on it together: ranks
// that disagree would otherwise issue different collectives and hang or corrupt memory.
#include <string>
#include <vector>

#include "strider/dist/process_group.h"

namespace strider::dist {

// Collective: every rank calls it with its own `lines`. When they differ, throws on every rank
// an Error naming `what`, the ranks that differ from rank 0 and, for each, the first line that
// differs from rank 0's (for example "rank 1 has 'param h.0.attn.weight [192, 64] float32' where
// rank 0 has 'param h.0.attn.weight [384, 128] float32'"). Costs one small all-reduce when they
// agree.
void check_same_across_ranks(ProcessGroup& pg, const std::string& what, const std::vector<std::string>& lines);

// Collective: every rank's `text`, indexed by rank, on every rank (two all-gathers: the lengths,
// then the texts padded to the longest). `what` labels the collectives.
std::vector<std::string> all_gather_strings(ProcessGroup& pg, const std::string& what, const std::string& text);

}  // namespace strider::dist
