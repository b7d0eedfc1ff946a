#include "strider/dist/mesh.h"

#include <unistd.h>

#include <climits>
#include <string>

#include "dist/buffer_math.h"
#include "dist/hash.h"

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

ShardReplicaGroups make_host_shard_replica_groups(ProcessGroup& world) {
  char name[HOST_NAME_MAX + 1] = {};
  gethostname(name, sizeof name - 1);
  Tensor mine = detail::flat_buffer(1, kLong), all = detail::flat_buffer(world.size(), kLong);
  *static_cast<int64_t*>(mine.data()) = detail::hash63(detail::fnv1a(name));
  {
    CollectiveLabel label("host names for hybrid sharding");
    world.all_gather(all, mine);
  }
  const auto* hosts = static_cast<const int64_t*>(all.data());
  // Ranks of one host must be consecutive and every host must run as many ranks, or the
  // replicas x shards layout does not exist.
  int per_host = 0;
  while (per_host < world.size() && hosts[per_host] == hosts[0]) ++per_host;
  for (int q = 0; q < world.size(); ++q)
    STRIDER_CHECK(hosts[q] == hosts[q - q % per_host], "hybrid sharding", "rank ", q,
                  " breaks the layout of ", per_host, " consecutive ranks per host that rank 0's host has; "
                  "place ranks by host (mpirun --map-by node is not it; the default by-slot is) or set "
                  "shard_group_size (--shard-group-size) explicitly");
  return make_shard_replica_groups(world, per_host);
}

}  // namespace strider::dist
