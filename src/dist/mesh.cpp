#include "strider/dist/mesh.h"

namespace strider::dist {

ShardReplicaGroups make_shard_replica_groups(ProcessGroup& world, int shard_group_size) {
  const int n = world.size(), r = world.rank();
  STRIDER_CHECK(shard_group_size > 0 && n % shard_group_size == 0, "make_shard_replica_groups", "shard group size ",
                shard_group_size, " does not divide the world of ", n, " ranks");
  ShardReplicaGroups g;
  g.shard = world.split(r / shard_group_size, r);
  g.replica = world.split(r % shard_group_size, r);
  return g;
}

}  // namespace strider::dist
