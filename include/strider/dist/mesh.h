#pragma once
// The 2-D layout hybrid sharding needs: the world as replicas x shards. Ranks
// [g * shard_group_size, (g + 1) * shard_group_size) form shard group g; the ranks with the same
// position in every shard group form a replica group. Parameters are sharded inside a shard
// group and replicated across replica groups.
#include <memory>

#include "strider/dist/process_group.h"

namespace strider::dist {

struct ShardReplicaGroups {
  std::shared_ptr<ProcessGroup> shard{};    // size shard_group_size; this rank's shard group
  std::shared_ptr<ProcessGroup> replica{};  // size world / shard_group_size; same shard position
};

// Collective over `world`; shard_group_size must divide world.size().
ShardReplicaGroups make_shard_replica_groups(ProcessGroup& world, int shard_group_size);

// The same with one shard group per host (PyTorch's HYBRID_SHARD default): every host must run
// the same number of consecutive ranks. Collective over `world`.
ShardReplicaGroups make_host_shard_replica_groups(ProcessGroup& world);

}  // namespace strider::dist
