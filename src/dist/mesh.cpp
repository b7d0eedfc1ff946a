#include "strider/dist/mesh.h"

#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "dist/buffer_math.h"
#include "dist/hash.h"
#include "strider/dist/consistency.h"

namespace strider::dist {

ShardReplicaGroups make_shard_replica_groups(ProcessGroup& world, int shard_group_size) {
  const int n = world.size(), r = world.rank();
  // Every rank must pass the same size: split() with different ones builds groups of mismatched
  // sizes without any error. Checked first, so a bad size throws the same error on every rank.
  check_same_across_ranks(world, "make_shard_replica_groups' shard group size",
                          {"shard group size " + std::to_string(shard_group_size)});
  STRIDER_CHECK(shard_group_size > 0 && n % shard_group_size == 0, "make_shard_replica_groups", "shard group size ",
                shard_group_size, " does not divide the world of ", n, " ranks");
  ShardReplicaGroups g;
  g.shard = world.split(r / shard_group_size, r);
  g.replica = world.split(r % shard_group_size, r);
  return g;
}

namespace {

// Every rank's host name, hashed; collective over `world`.
std::vector<int64_t> host_ids(ProcessGroup& world) {
  char name[HOST_NAME_MAX + 1] = {};
  gethostname(name, sizeof name - 1);
  Tensor mine = detail::flat_buffer(1, kLong), all = detail::flat_buffer(world.size(), kLong);
  *static_cast<int64_t*>(mine.data()) = detail::hash63(detail::fnv1a(name));
  {
    CollectiveLabel label("host names");
    world.all_gather(all, mine);
  }
  const auto* ids = static_cast<const int64_t*>(all.data());
  return {ids, ids + world.size()};
}

}  // namespace

HostLayout host_layout(ProcessGroup& world) {
  const std::vector<int64_t> ids = host_ids(world);
  const int n = world.size();
  HostLayout h;
  h.ranks_per_host = 0;
  while (h.ranks_per_host < n && ids[h.ranks_per_host] == ids[0]) ++h.ranks_per_host;
  h.hosts = n / h.ranks_per_host;
  h.regular = n % h.ranks_per_host == 0;
  for (int q = 0; q < n && h.regular; ++q) h.regular = ids[q] == ids[q - q % h.ranks_per_host];
  // Consecutive blocks of one host name each, and no host name in two blocks.
  for (int b = 1; b < h.hosts && h.regular; ++b)
    for (int c = 0; c < b && h.regular; ++c) h.regular = ids[b * h.ranks_per_host] != ids[c * h.ranks_per_host];
  return h;
}

ShardReplicaGroups make_host_shard_replica_groups(ProcessGroup& world) {
  const HostLayout h = host_layout(world);
  STRIDER_CHECK(h.regular, "hybrid sharding", "the ranks do not form ", h.ranks_per_host,
                " consecutive ranks per host as rank 0's host has; place ranks by host (mpirun --map-by node "
                "is not it; the default by-slot is) or set shard_group_size (--shard-group-size) explicitly");
  return make_shard_replica_groups(world, h.ranks_per_host);
}

}  // namespace strider::dist
