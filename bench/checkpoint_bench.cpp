// Checkpoint throughput and the asynchronous save's cost, for a GPT under FULL_SHARD. Run under
// mpirun; rank 0 prints JSON lines.
//
//   mpirun -np 2 build/bench/strider_bench_checkpoint --n-layer 12 --n-embd 768 --dir /var/tmp/ckb
//       [--rounds 3 --steps 10 --every 1 --flat-saves 100 --batch 2 --seq 64]
//
// Throughput: each round alternates a plain sequential write (8 MiB write() calls, then fsync)
// of as many bytes as this rank's checkpoint file into a new file, removing the previous one
// (as a checkpoint with keep_last = 1 does), Checkpointer::save, a plain sequential read
// of that file and checkpoint::load (which verifies every block). Reads start cold: each file's
// pages are dropped from the page cache first (posix_fadvise), for both sides.
// Async: median step time without saving, saving every --every steps in the background and
// blocking; the stall (time training waited for the checkpointer) per step; tensor memory
// and resident memory over the saves against the largest unit's parameter shard.
#include <fcntl.h>
#include <unistd.h>

#include <strider/strider.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace strider;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = size_t{8} << 20;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024.0;
  return 0;
}

double max_over_ranks(dist::ProcessGroup& pg, double v) {
  Tensor t = full({1}, v, kDouble);
  pg.all_reduce(t, dist::ReduceOp::Max);
  return t.item<double>();
}

void drop_cached(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void plain_write(const std::string& path, uint64_t bytes, std::vector<char>& buf) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (uint64_t done = 0; done < bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - done));
    if (::write(fd, buf.data(), n) != static_cast<ssize_t>(n)) std::perror("write");
    done += n;
  }
  ::fsync(fd);
  ::close(fd);
}

void plain_read(const std::string& path, std::vector<char>& buf) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  while (::read(fd, buf.data(), kChunk) > 0) {
  }
  ::close(fd);
}

// Times fn on every rank between barriers; the slowest rank's time.
template <class F>
double timed(dist::ProcessGroup& pg, F&& fn) {
  pg.barrier();
  const auto t0 = Clock::now();
  fn();
  const double mine = since(t0);
  return max_over_ranks(pg, mine);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n_layer = 12, n_embd = 768, batch = 2, seq = 64, rounds = 3, steps = 10, every = 1, flat_saves = 0;
  std::string dir = "/var/tmp/strider_ckpt_bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--n-layer") n_layer = std::stoll(v);
    if (k == "--n-embd") n_embd = std::stoll(v);
    if (k == "--batch") batch = std::stoll(v);
    if (k == "--seq") seq = std::stoll(v);
    if (k == "--rounds") rounds = std::stoll(v);
    if (k == "--steps") steps = std::stoll(v);
    if (k == "--every") every = std::max<int64_t>(1, std::stoll(v));
    if (k == "--flat-saves") flat_saves = std::stoll(v);
    if (k == "--dir") dir = v;
  }
  auto pg = dist::MpiProcessGroup::init(&argc, &argv);
  return dist::run_or_abort(pg, [&] {
    const int rank = pg->rank();
    if (rank == 0) fs::remove_all(dir);
    pg->barrier();
    manual_seed(1);
    models::GPTConfig cfg{.vocab_size = 256, .block_size = seq, .n_layer = n_layer, .n_head = n_embd / 64, .n_embd = n_embd};
    auto gpt = std::make_shared<models::GPT>(cfg);
    const int64_t params = gpt->num_parameters();
    fsdp::FSDPOptions o;
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
    auto model = fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
    optim::AdamW opt(model->named_parameters(), {.lr = 1e-4});
    model->register_optimizer(opt);
    Generator g(7 + rank);
    Tensor tokens = (rand({batch, seq + 1}, {}, &g) * 256.0).to(kLong);
    Tensor x = tokens.narrow(1, 0, seq).contiguous(), y = tokens.narrow(1, 1, seq).contiguous();
    auto step = [&] {
      Tensor loss = nn::functional::cross_entropy((*model)(x).reshape({-1, 256}), y.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
    };
    step();  // the moments exist
    const checkpoint::TrainingState state{.model = model.get(), .optimizer = &opt};
    std::map<std::string, uint64_t> unit_bytes;
    for (fsdp::ParameterShard& s : model->parameter_shards())
      unit_bytes[s.unit] += s.rows.nbytes();
    uint64_t largest_unit = 0;
    for (auto& [u, b] : unit_bytes) largest_unit = std::max(largest_unit, b);
    const double largest_unit_shard = max_over_ranks(*pg, static_cast<double>(largest_unit));

    // ---- throughput
    const std::string run = dir + "/run", plain = dir + "/plain-" + std::to_string(rank);
    checkpoint::Checkpointer ckpt(run, pg, {.keep_last = 1});
    std::string saved = ckpt.save(0, state);
    const checkpoint::Manifest m = checkpoint::read_manifest(saved);
    const uint64_t my_bytes = m.files[static_cast<size_t>(rank)].bytes;
    double total_bytes = 0;
    for (const auto& f : m.files) total_bytes += static_cast<double>(f.bytes);
    std::vector<char> buf(kChunk, 1);
    std::vector<double> w_plain, w_save, r_plain, r_load;
    for (int64_t r = 0; r < rounds; ++r) {
      // Like a checkpoint directory: a new file each time, the previous one removed.
      const std::string plain_prev = plain + "-" + std::to_string(r - 1), plain_now = plain + "-" + std::to_string(r);
      w_plain.push_back(timed(*pg, [&] {
        plain_write(plain_now, my_bytes, buf);
        fs::remove(plain_prev);
      }));
      w_save.push_back(timed(*pg, [&] { saved = ckpt.save(r + 1, state); }));
      const std::string my_file = saved + "/" + checkpoint::read_manifest(saved).files[static_cast<size_t>(rank)].name;
      drop_cached(plain_now);
      drop_cached(my_file);
      drop_cached(saved + "/manifest.json");
      r_plain.push_back(timed(*pg, [&] { plain_read(plain_now, buf); }));
      r_load.push_back(timed(*pg, [&] { checkpoint::load(saved, state, pg.get()); }));
    }
    fs::remove(plain + "-" + std::to_string(rounds - 1));
    const double gb = total_bytes / 1e9;
    if (rank == 0)
      std::printf("{\"phase\":\"throughput\",\"ranks\":%d,\"params\":%lld,\"checkpoint_bytes\":%.0f,\"rounds\":%lld,"
                  "\"plain_write_gb_s\":%.3f,\"save_gb_s\":%.3f,\"save_over_plain\":%.3f,"
                  "\"plain_read_gb_s\":%.3f,\"load_gb_s\":%.3f,\"load_over_plain\":%.3f}\n",
                  pg->size(), static_cast<long long>(params), total_bytes, static_cast<long long>(rounds),
                  gb / median(w_plain), gb / median(w_save), median(w_plain) / median(w_save), gb / median(r_plain),
                  gb / median(r_load), median(r_plain) / median(r_load));

    // ---- asynchronous saves: step time, stall, memory
    auto steps_with = [&](const std::string& mode, int64_t n, double* extra_peak, std::vector<double>* rss) {
      checkpoint::AsyncCheckpointer background(dir + "/async", pg, {.keep_last = 2});
      checkpoint::Checkpointer blocking(dir + "/blocking", pg, {.keep_last = 2});
      model->wait_for_pending_gathers();
      reset_peak_memory();
      const double base = static_cast<double>(memory_stats().current_bytes);
      std::vector<double> times;
      for (int64_t s = 0; s < n; ++s) {
        times.push_back(timed(*pg, [&] {
          step();
          if (s % every != every - 1) return;
          if (mode == "async") background.save(s, state);
          if (mode == "blocking") blocking.save(s, state);
        }));
        if (rss) rss->push_back(max_over_ranks(*pg, status_bytes("RssAnon")));
      }
      const auto in_steps = background.stats();  // the stall inside the steps, not the final wait()
      if (mode == "async") background.wait();
      *extra_peak = max_over_ranks(*pg, static_cast<double>(memory_stats().peak_bytes) - base);
      const double stall = mode == "async" ? max_over_ranks(*pg, in_steps.stall_seconds) / static_cast<double>(n) : 0;  // per step
      const double max_stall = mode == "async" ? max_over_ranks(*pg, in_steps.max_stall_seconds) : 0;
      const double snapshot = mode == "async" ? max_over_ranks(*pg, static_cast<double>(background.stats().snapshot_bytes)) : 0;
      // The mean, not the median: with --every > 1 the saving steps are the minority.
      double mean = 0;
      for (double t : times) mean += t / static_cast<double>(times.size());
      return std::vector<double>{mean, stall, max_stall, snapshot};
    };
    // Alternate the three modes so drift in the machine's speed hits all alike.
    std::map<std::string, std::vector<double>> step_s, stall_s, max_stall_s, peak, snap;
    for (int64_t r = 0; r < 2; ++r)
      for (const std::string mode : {"none", "async", "blocking"}) {
        double extra = 0;
        const auto v = steps_with(mode, steps, &extra, nullptr);
        step_s[mode].push_back(v[0]);
        stall_s[mode].push_back(v[1]);
        max_stall_s[mode].push_back(v[2]);
        snap[mode].push_back(v[3]);
        peak[mode].push_back(extra);
      }
    if (rank == 0)
      std::printf("{\"phase\":\"async\",\"steps\":%lld,\"every\":%lld,\"step_s\":%.4f,\"step_s_async\":%.4f,\"step_s_blocking\":%.4f,"
                  "\"stall_s_per_step\":%.4f,\"stall_over_step\":%.4f,\"max_stall_s\":%.4f,"
                  "\"async_step_over_plain\":%.3f,\"blocking_step_over_plain\":%.3f,"
                  "\"extra_peak_bytes_none\":%.0f,\"extra_peak_bytes_async\":%.0f,\"snapshot_bytes\":%.0f,"
                  "\"largest_unit_shard_bytes\":%.0f,\"async_extra_over_unit_shard\":%.3f}\n",
                  static_cast<long long>(steps), static_cast<long long>(every), median(step_s["none"]), median(step_s["async"]), median(step_s["blocking"]),
                  median(stall_s["async"]), median(stall_s["async"]) / median(step_s["none"]), median(max_stall_s["async"]),
                  median(step_s["async"]) / median(step_s["none"]), median(step_s["blocking"]) / median(step_s["none"]),
                  median(peak["none"]), median(peak["async"]), median(snap["async"]), largest_unit_shard,
                  (median(peak["async"]) - median(peak["none"])) / largest_unit_shard);
    if (flat_saves > 0) {
      double extra = 0;
      std::vector<double> rss;
      steps_with("async", flat_saves, &extra, &rss);
      if (rank == 0) {
        std::printf("{\"phase\":\"flat\",\"saves\":%lld,\"rss_anon_bytes\":[", static_cast<long long>(flat_saves));
        for (size_t i = 0; i < rss.size(); i += std::max<size_t>(1, rss.size() / 10))
          std::printf("%s%.0f", i ? "," : "", rss[i]);
        std::printf("],\"rss_anon_last\":%.0f,\"extra_peak_bytes\":%.0f}\n", rss.back(), extra);
      }
    }
    if (rank == 0) fs::remove_all(dir);
    return 0;
  });
}
