// Collective bandwidth under mpirun: every algorithm of every collective for 4 KiB .. 64 MiB,
// as bus bandwidth (the bytes each rank must move, nccl-tests' definition) and as a ratio to a
// memcpy of the same bytes timed in the same run. Picks MpiProcessGroup's Auto choices.
//
//   mpirun -np 2 build/bench/strider_bench_collectives [--max-mib 64] [--reps 20]
// First lines: what the per-collective signature check costs (a 4-byte all-reduce with and without,
// one at a time and queued back to back).
//   mpirun --host h0:K,h1:K ... strider_bench_collectives --link-patterns 1 [--max-mib 64] [--compute-load 1]
// instead measures what the link between hosts delivers under each strategy's traffic: one JSON
// line per pattern with the bytes leaving a host per second (bench/link_table.py reads them).
// --compute-load 1 measures it while each rank also multiplies matrices on a thread of its own,
// as a training step's compute runs beside its collectives ("under_compute": true).
#include <strider/dist/mesh.h>
#include <strider/dist/mpi_process_group.h>
#include <strider/strider.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace strider;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of `reps` runs of fn, after two warm-ups; ranks start each run together.
template <class F>
double time_it(dist::ProcessGroup& pg, int reps, F&& fn) {
  std::vector<double> t;
  for (int i = 0; i < reps + 2; ++i) {
    pg.barrier();
    const auto start = Clock::now();
    fn();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (i >= 2) t.push_back(s);
  }
  // The slowest rank defines the collective's time.
  Tensor worst = full({1}, median(t), kDouble);
  pg.all_reduce(worst, dist::ReduceOp::Max);
  return worst.item<double>();
}

// The link's rate under each strategy's traffic, on a regular multi-host layout (H hosts of K
// consecutive ranks): the world's rings (FULL_SHARD's gathers and reductions, DDP's all-reduce)
// cross from each host on one edge, one flow each way; HYBRID_SHARD's replica all-reduces are K
// rings at once (one per position on the host), K flows each way, with a reduction between the
// halves. Each pattern's bytes leaving a host are the cost model's ring volumes
// (fsdp/cost_model.h) for a buffer of `bytes`; the rate is those bytes over the slowest rank's
// median time. The world's all-gather is a ring, as FSDP's gathers are (all_gather_pieces).
// Multiplies 384 x 384 matrices on a thread of its own until destroyed: a training step's
// compute beside the collectives (one thread per rank, as the steps run with OMP_NUM_THREADS=1).
class ComputeLoad {
 public:
  ComputeLoad()
      : thread_([this] {
          Tensor a = ones({384, 384}), b = ones({384, 384});
          while (!stop_.load()) (void)matmul(a, b);
        }) {}
  ~ComputeLoad() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void link_patterns(dist::MpiProcessGroup& world, int64_t bytes, int reps, bool under_compute) {
  const dist::HostLayout layout = dist::host_layout(world);
  const int n = world.size(), rank = world.rank(), hosts = layout.hosts, per_host = layout.ranks_per_host;
  if (hosts < 2 || !layout.regular) {
    if (rank == 0)
      std::fprintf(stderr, "--link-patterns needs at least 2 hosts running the same number of consecutive ranks "
                           "(got %d host(s)%s)\n", hosts, layout.regular ? "" : ", uneven");
    return;
  }
  const dist::ShardReplicaGroups groups = dist::make_host_shard_replica_groups(world);
  world.set_algorithm(dist::Collective::AllGather, dist::Algorithm::Ring);
  const int64_t count = bytes / 4 / n * n;  // float32 elements, a multiple of the world
  const double whole = static_cast<double>(count) * 4;
  Tensor full_buf = ones({count}), part = ones({count / n}), replica_buf = ones({count});
  struct Pattern {
    const char* name;
    double bytes_leaving_host;  // per run of the pattern
    std::function<void()> run;
  };
  const double ring = static_cast<double>(n - 1) / n, replica_ring = static_cast<double>(hosts - 1) / hosts;
  const Pattern patterns[] = {
      {"world_all_gather", ring * whole, [&] { world.all_gather(full_buf, part); }},
      {"world_reduce_scatter", ring * whole, [&] { world.reduce_scatter(part, full_buf, dist::ReduceOp::Sum); }},
      {"world_all_reduce", 2 * ring * whole, [&] { world.all_reduce(full_buf, dist::ReduceOp::Sum); }},
      {"replica_all_reduce", per_host * 2 * replica_ring * whole,
       [&] { groups.replica->all_reduce(replica_buf, dist::ReduceOp::Sum); }},
  };
  std::optional<ComputeLoad> load;
  if (under_compute) load.emplace();
  for (const Pattern& p : patterns) {
    const double s = time_it(world, reps, p.run);
    if (rank == 0)
      std::printf("{\"link_pattern\":\"%s\",\"under_compute\":%s,\"hosts\":%d,\"ranks_per_host\":%d,"
                  "\"buffer_bytes\":%.0f,\"bytes_leaving_host\":%.0f,\"seconds\":%.6f,\"gbytes_per_s\":%.4f}\n",
                  p.name, under_compute ? "true" : "false", hosts, per_host, whole, p.bytes_leaving_host, s,
                  p.bytes_leaving_host / s / 1e9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto pg = dist::MpiProcessGroup::init(&argc, &argv);
  int64_t max_mib = 64;
  int reps = 20;
  bool patterns = false, under_compute = false;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--compute-load") under_compute = std::string(argv[i + 1]) != "0";
    if (std::string(argv[i]) == "--max-mib") max_mib = std::stoll(argv[i + 1]);
    if (std::string(argv[i]) == "--reps") reps = std::stoi(argv[i + 1]);
    if (std::string(argv[i]) == "--link-patterns") patterns = std::string(argv[i + 1]) != "0";
  }
  if (patterns) {
    link_patterns(*pg, max_mib << 20, reps, under_compute);
    return 0;
  }
  const int n = pg->size(), rank = pg->rank();
  // What the signature check adds to every collective: a 4-byte all-reduce timed with the check
  // on and off, alternating (switched at the same point on every rank).
  {
    Tensor one = ones({1});
    double on = 0, off = 0;
    for (int round = 0; round < 5; ++round)
      for (bool checks : {true, false}) {
        pg->barrier();
        pg->set_signature_checks(checks);
        (checks ? on : off) += time_it(*pg, reps * 10, [&] { pg->all_reduce(one); }) / 5;
      }
    pg->set_signature_checks(true);
    if (rank == 0)
      std::printf("4-byte all_reduce: %.1f us with the signature check, %.1f us without (%.1f us per collective)\n",
                  on * 1e6, off * 1e6, (on - off) * 1e6);
  }
  // The same with collectives queued back to back (as FSDP's prefetches are), where checks can
  // overlap the collectives before them: 32 async 4-byte all-reduces, then one wait for all.
  {
    constexpr int kQueued = 32;
    std::vector<Tensor> bufs;
    for (int i = 0; i < kQueued; ++i) bufs.push_back(ones({1}));
    double on = 0, off = 0;
    for (int round = 0; round < 5; ++round)
      for (bool checks : {true, false}) {
        pg->barrier();
        pg->set_signature_checks(checks);
        (checks ? on : off) += time_it(*pg, reps, [&] {
          std::vector<std::shared_ptr<dist::Work>> works;
          for (const Tensor& b : bufs) works.push_back(pg->all_reduce_async(b, dist::ReduceOp::Sum));
          for (auto& w : works) w->wait();
        }) / 5 / kQueued;
      }
    pg->set_signature_checks(true);
    if (rank == 0)
      std::printf("%d queued 4-byte all_reduces: %.1f us each with the signature check, %.1f us without (%.1f us "
                  "per collective)\n",
                  kQueued, on * 1e6, off * 1e6, (on - off) * 1e6);
  }
  if (rank == 0)
    std::printf("%d ranks; bus bandwidth in GB/s; 'vs memcpy' = memcpy time of the same bytes / collective time\n"
                "%-15s %10s %10s %10s %10s %10s %10s\n",
                n, "collective", "bytes", "mpi GB/s", "ring GB/s", "mpi/mcpy", "ring/mcpy", "auto");
  for (int64_t bytes = 4096; bytes <= (max_mib << 20); bytes *= 4) {
    const int64_t count = bytes / 4;  // float32 elements of the whole (gathered / unreduced) buffer
    const int64_t block = count / n;
    Tensor full_buf = ones({block * n}), part = ones({block}), src = ones({block * n});
    std::vector<char> a(static_cast<size_t>(bytes)), b(static_cast<size_t>(bytes), 1);
    const double memcpy_s = time_it(*pg, reps, [&] { std::memcpy(a.data(), b.data(), a.size()); });
    struct Row {
      const char* name;
      dist::Collective c;
      double factor;  // bus bytes per buffer byte
    };
    const double ring_factor = static_cast<double>(n - 1) / n;
    for (Row row : {Row{"all_gather", dist::Collective::AllGather, ring_factor},
                    Row{"reduce_scatter", dist::Collective::ReduceScatter, ring_factor},
                    Row{"all_reduce", dist::Collective::AllReduce, 2 * ring_factor}}) {
      double secs[2];
      int k = 0;
      for (dist::Algorithm algo : {dist::Algorithm::Mpi, dist::Algorithm::Ring}) {
        pg->set_algorithm(row.c, algo);
        secs[k++] = time_it(*pg, reps, [&] {
          if (row.c == dist::Collective::AllGather) pg->all_gather(full_buf, part);
          if (row.c == dist::Collective::ReduceScatter) pg->reduce_scatter(part, src, dist::ReduceOp::Sum);
          if (row.c == dist::Collective::AllReduce) pg->all_reduce(full_buf, dist::ReduceOp::Sum);
        });
      }
      pg->set_algorithm(row.c, dist::Algorithm::Auto);
      const double busbytes = row.factor * static_cast<double>(bytes);
      if (rank == 0)
        std::printf("%-15s %10lld %10.2f %10.2f %10.2f %10.2f %10s\n", row.name, static_cast<long long>(bytes),
                    busbytes / secs[0] / 1e9, busbytes / secs[1] / 1e9, memcpy_s / secs[0], memcpy_s / secs[1],
                    pg->algorithm_for(row.c, bytes) == dist::Algorithm::Ring ? "ring" : "mpi");
    }
  }
  return 0;
}
