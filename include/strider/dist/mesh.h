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

// How the world's ranks sit on hosts (by host name). `regular`: every host runs ranks_per_host
// consecutive ranks (mpirun's default by-slot placement), the layout the above needs and the
// cost model's link traffic assumes. Collective over `world`.
struct HostLayout {
  int hosts = 1;
  int ranks_per_host = 1;  // rank 0's host's count
  bool regular = true;
};
HostLayout host_layout(ProcessGroup& world);

}  // namespace strider::dist
