// Per-rank step time and peak memory of GPT training under local training, DDP and each FSDP
// strategy. Run under mpirun (or alone for "local"); prints one JSON line from rank 0.
//
//   mpirun -np 2 build/bench/strider_bench_fsdp --strategy full_shard --n-layer 12 --n-embd 768
//       [--batch 2 --seq 64 --steps 5 --warmup 2 --prefetch 1 --limit-all-gathers 1 --offload /var/tmp --deterministic 1 --deferred-init 1
//        --activation-checkpointing 1 --dtype bfloat16 --offload-read-ahead-mb 512 --offload-stream 1]
// Throughput: tokens per second over all ranks and the model FLOP utilization (MFU): model FLOPs
// per step (6 x the parameters that multiply, per token, plus 12 x layers x width x sequence per
// token for attention's two matmuls; a recomputation under activation checkpointing is not
// counted) over the step time, against the float32 FMA peak and the bfloat16 dot-product peak
// of all ranks' cores, each measured before and after the steps in the same process (all ranks
// over one 200 ms window after a barrier); and a
// second line ("mfu":"outside") against the peak strider_peak_canary measures in a process of its
// own before and after (median, min, max of 5 rounds each) and, every --peak-every measured steps
// (default 5, so only in runs of more than 5 measured steps; 0: never), between steps (3 rounds,
// outside the timed steps); printed only when it
// can be trusted (judge_mfu), else null with the reason.
// With --offload DIR: the bytes the steps read from and wrote to the disk (/proc/self/io, all
// ranks), and the disk's O_DIRECT bandwidth with every rank streaming 1 GiB, measured after the
// steps in DIR; bench/run_offload_side_by_side.sh turns them into the bandwidth a step needs.
// --deterministic 1 runs deterministic mode with one micro-batch per rank (the same per-rank
// batch as the normal mode), so the two differ only in how gradients are reduced.
#include <strider/strider.h>

#include "disk_bandwidth.h"
#include "fma_peak.h"
#include "outside_peak.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace strider;

namespace {

// A field of /proc/self/status in bytes ("VmHWM", "RssAnon", "RssFile").
double status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024.0;
  return 0;
}

// Restarts VmHWM from the current resident set, so the peak covers the measured steps only.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Resident memory split by kind, sampled at the phase boundaries of a step. Anonymous pages
// (the offload tier's resident blocks included) must stay in RAM; file pages the kernel can drop.
struct ResidentPeaks {
  double anon = 0, file = 0;
  void sample() {
    anon = std::max(anon, status_bytes("RssAnon"));
    file = std::max(file, status_bytes("RssFile"));
  }
};

// What a GPT step keeps for backward, estimated (fsdp::memory_formula leaves activations out):
// per block 32 bytes of each token's width at 2 bytes an element, Korthikanti et al.'s "Reducing
// Activation Recomputation in Large Transformer Models" 34 s b h less their two dropout masks
// (none here; attention is fused, so no a s^2 term), in the compute dtype; under activation
// checkpointing each block's input and one block's worth.
double gpt_activation_bytes(int64_t layers, int64_t tokens, int64_t width, int64_t element_bytes, bool checkpointing) {
  const double token_width = static_cast<double>(tokens * width * element_bytes);
  const double block = 16 * token_width;
  return checkpointing ? static_cast<double>(layers) * token_width + block : static_cast<double>(layers) * block;
}

double sum_over_ranks(dist::ProcessGroup& pg, double v) {
  Tensor t = full({1}, v, kDouble);
  pg.all_reduce(t, dist::ReduceOp::Sum);
  return t.item<double>();
}

double max_over_ranks(dist::ProcessGroup& pg, double v) {
  Tensor t = full({1}, v, kDouble);
  pg.all_reduce(t, dist::ReduceOp::Max);
  return t.item<double>();
}

}  // namespace

// Whether an MFU over the outside peak can be trusted: the outside peaks taken before, between
// (--peak-every) and after the steps agree within 5%, the in-process peak agrees with their mean
// within 3%, and the step time is a median of at least 5 steps after at least 2 warm-up steps.
// Judged for the FMA peak, and for a bfloat16 run also for the bfloat16 dot-product peak (AMX
// tiles where the CPU has them), the one its MFU is taken against. Otherwise the MFU is not
// printed, and the reason is.
struct MfuVerdict {
  bool reliable = true;
  std::string why_not;
};

// One peak: `loop` picks it out of each outside sample; `name` says which in the reason.
MfuVerdict judge_peak(const std::vector<bench::OutsidePeak>& samples, bench::PeakSample bench::OutsidePeak::*loop,
                      double in_process, const char* name) {
  char why[256];
  double lo = (samples.front().*loop).median, hi = lo, outside = 0;
  for (const bench::OutsidePeak& o : samples) {
    lo = std::min(lo, (o.*loop).median);
    hi = std::max(hi, (o.*loop).median);
    outside += (o.*loop).median / static_cast<double>(samples.size());
  }
  if (!(outside > 0)) {
    std::snprintf(why, sizeof why, "the outside canary measured no %s peak", name);
    return {false, why};
  }
  if (hi - lo > 0.05 * outside) {
    std::snprintf(why, sizeof why, "the outside %s peak moved between %.0f and %.0f GFLOP/s during the run (over 5%%)",
                  name, lo, hi);
    return {false, why};
  }
  if (std::fabs(in_process - outside) > 0.03 * outside) {
    std::snprintf(why, sizeof why, "the in-process %s peak %.0f and the outside one %.0f GFLOP/s differ by over 3%%",
                  name, in_process, outside);
    return {false, why};
  }
  return {};
}

MfuVerdict judge_mfu(const std::vector<bench::OutsidePeak>& samples, double in_process_fma, double in_process_bf16,
                     bool bfloat16_run, int measured_steps, int64_t warmup_steps) {
  for (const bench::OutsidePeak& o : samples)
    if (!o.measured) return {false, "the outside canary did not run: " + o.error};
  if (MfuVerdict v = judge_peak(samples, &bench::OutsidePeak::fma, in_process_fma, "FMA"); !v.reliable) return v;
  // Below AVX512_BF16 bfloat16 computes in float32: the FMA peak is the one that counts.
  if (bfloat16_run && bench::peak_level() >= bench::PeakLevel::avx512_bf16) {
    const char* name = std::string(bench::peak_isa()) == "amx_bf16" ? "bfloat16 dot-product (AMX)" : "bfloat16 dot-product";
    if (MfuVerdict v = judge_peak(samples, &bench::OutsidePeak::bf16, in_process_bf16, name); !v.reliable) return v;
  }
  if (measured_steps < 5) return {false, "fewer than 5 measured steps (--steps)"};
  if (warmup_steps < 2) return {false, "fewer than 2 warm-up steps (--warmup)"};
  return {};
}

// The medians of the outside peaks taken between the steps: their median, min and max.
bench::PeakSample summarize(const std::vector<bench::OutsidePeak>& samples, bench::PeakSample bench::OutsidePeak::*loop) {
  std::vector<double> m;
  for (const bench::OutsidePeak& o : samples) m.push_back((o.*loop).median);
  if (m.empty()) return {};
  std::sort(m.begin(), m.end());
  return {m[m.size() / 2], m.front(), m.back()};
}

std::string describe(const bench::PeakSample& s) {
  if (s.median <= 0) return "null";
  char text[160];
  std::snprintf(text, sizeof text, "{\"median\":%.1f,\"min\":%.1f,\"max\":%.1f}", s.median, s.min, s.max);
  return text;
}

// Across hosts (ranks placed by host, normal mode): what the cost model says leaves each host per
// step and how much of it no computation hides, for bench/link_table.py to turn into step times
// at a link rate. Collective; printed by rank 0.
void print_link_prediction(dist::ProcessGroup& pg, fsdp::FullyShardedDataParallel* sharded, double step_s) {
  const dist::HostLayout hosts = dist::host_layout(pg);
  if (!sharded || !hosts.regular || hosts.hosts < 2 || pg.rank() != 0) return;
  const std::vector<fsdp::UnitLayout> units = sharded->unit_layouts();
  if (std::any_of(units.begin(), units.end(), [](const fsdp::UnitLayout& u) { return u.exact_gradients; })) return;
  const fsdp::LinkTraffic l = fsdp::link_traffic_per_step(units, hosts.ranks_per_host, 0);
  std::printf("{\"link\":\"prediction\",\"hosts\":%d,\"ranks_per_host\":%d,\"bytes_leaving_host_per_step\":%lld,"
              "\"forward_bytes\":%lld,\"backward_bytes\":%lld,\"unhidden_forward_bytes\":%lld,"
              "\"unhidden_backward_bytes\":%lld,\"step_s\":%.4f}\n",
              hosts.hosts, hosts.ranks_per_host, static_cast<long long>(l.total()), static_cast<long long>(l.forward),
              static_cast<long long>(l.backward), static_cast<long long>(l.unhidden_forward),
              static_cast<long long>(l.unhidden_backward), step_s);
  // Unit by unit, for the simulation of the comm queue.
  std::string list;
  for (const fsdp::UnitLinkBytes& u : fsdp::link_bytes_per_unit(units, hosts.ranks_per_host, 0)) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "%s{\"name\":\"%s\",\"is_root\":%s,\"elements\":%lld,\"gather\":%lld,\"regather\":%lld,"
                  "\"reduce\":%lld,\"replica\":%lld}",
                  list.empty() ? "" : ",", u.name.c_str(), u.is_root ? "true" : "false",
                  static_cast<long long>(u.elements), static_cast<long long>(u.gather),
                  static_cast<long long>(u.regather), static_cast<long long>(u.reduce),
                  static_cast<long long>(u.replica));
    list += text;
  }
  std::printf("{\"link\":\"units\",\"units\":[%s]}\n", list.c_str());
}

int main(int argc, char** argv) {
  std::string strategy = "full_shard";  // local | ddp | a ShardingStrategy's name
  int shard_group_size = 0;
  int64_t n_layer = 12, n_embd = 768, batch = 2, seq = 64, steps = 5, warmup = 2, peak_every = 5;
  bool prefetch = true, deterministic = false, deferred = false, checkpointing = false;
  int limit_all_gathers = fsdp::FSDPOptions().limit_all_gathers;  // units gathered ahead of use
  std::string dtype = "float32";  // bfloat16: MixedPrecision (bf16 compute and gathers, float32 masters)
  // Alternate steps with and without the collectives' signature checks. Without them a wait for
  // a late peer polls (there is no signature result to sleep on), so the A/B includes that.
  bool ab_signature_checks = false;
  std::string offload_dir;  // non-empty: CPUOffload to memory-mapped files there
  long long read_ahead_mb = fsdp::CPUOffload().read_ahead_bytes >> 20;
  bool offload_stream = true;  // 0: no registered optimizer, so the step reads everything back in backward
  bool optimizer_in_backward = false;  // each unit steps as its gradients are reduced
  std::string state_dtype = "float32";  // AdamW's moments: float32 | bfloat16
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--strategy") strategy = v;
    if (k == "--n-layer") n_layer = std::stoll(v);
    if (k == "--n-embd") n_embd = std::stoll(v);
    if (k == "--batch") batch = std::stoll(v);  // per rank
    if (k == "--seq") seq = std::stoll(v);
    if (k == "--steps") steps = std::stoll(v);
    if (k == "--warmup") warmup = std::stoll(v);
    if (k == "--peak-every") peak_every = std::stoll(v);
    if (k == "--prefetch") prefetch = v == "1";
    if (k == "--limit-all-gathers") limit_all_gathers = std::stoi(v);
    if (k == "--offload") offload_dir = v;
    if (k == "--offload-read-ahead-mb") read_ahead_mb = std::stoll(v);
    if (k == "--offload-stream") offload_stream = v == "1";
    if (k == "--optimizer-in-backward") optimizer_in_backward = v == "1";
    if (k == "--state-dtype") state_dtype = v;
    if (k == "--ab-signature-checks") ab_signature_checks = v == "1";
    if (k == "--shard-group-size") shard_group_size = std::stoi(v);
    if (k == "--deterministic") deterministic = v == "1";
    if (k == "--deferred-init") deferred = v == "1";  // nothing allocated whole: FSDP materializes shards
    if (k == "--activation-checkpointing") checkpointing = v == "1";
    if (k == "--dtype") dtype = v;
  }
  auto pg = dist::MpiProcessGroup::init(&argc, &argv);
  return dist::run_or_abort(pg, [&] {
    const double base_anon = max_over_ranks(*pg, status_bytes("RssAnon"));  // libraries, MPI, runtime
    manual_seed(1);
    models::GPTConfig cfg{.vocab_size = 256, .block_size = seq, .n_layer = n_layer, .n_head = n_embd / 64, .n_embd = n_embd};
    std::optional<nn::DeferredInit> deferred_init;
    if (deferred) deferred_init.emplace(1);
    auto gpt = std::make_shared<models::GPT>(cfg);
    deferred_init.reset();
    const int64_t params = gpt->num_parameters();
    if (checkpointing) nn::apply_activation_checkpointing(*gpt, [](nn::Module& m) { return m.type_name() == "Block"; });
    // Embedding lookups do no multiply-adds; every other parameter does one per token forward.
    const double matmul_params = static_cast<double>(params - (cfg.vocab_size + seq) * n_embd);
    const double flops_per_token = 6.0 * matmul_params + 12.0 * static_cast<double>(n_layer * n_embd * seq);
    // Every rank's cores at once: the flops all ranks do in one 200 ms window after a barrier,
    // over the window (fma_peak.h says why not each rank's own rate, summed).
    auto window_gflops = [&](bench::PeakLoop loop) {
      pg->barrier();
      const auto start = std::chrono::steady_clock::now();
      const double flops = bench::peak_flops_until(loop, start + std::chrono::milliseconds(200));
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      Tensor f = tensor(std::vector<double>{flops}), s = tensor(std::vector<double>{seconds});
      pg->all_reduce(f, dist::ReduceOp::Sum);
      pg->all_reduce(s, dist::ReduceOp::Max);
      return f.item<double>() / s.item<double>() / 1e9;
    };
    auto peaks = [&] {
      const double fma = window_gflops(bench::PeakLoop::Fma);
      return std::pair<double, double>{fma, window_gflops(bench::PeakLoop::Bf16Dot)};
    };
    // The outside canary: rank 0 runs it on every rank's threads and CPUs while the others wait.
    const std::vector<int> job_cpus = [&] {
      std::vector<int64_t> mine(CPU_SETSIZE, 0);
      for (int c : bench::allowed_cpus()) mine[c] = 1;
      Tensor t = tensor(mine);
      pg->all_reduce(t, dist::ReduceOp::Max);  // the union of the ranks' CPUs (the bench runs on one host)
      std::vector<int> cpus;
      const auto* any = static_cast<const int64_t*>(t.data());
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (any[c]) cpus.push_back(c);
      return cpus;
    }();
    auto outside = [&](int rounds) {
      pg->barrier();
      bench::OutsidePeak o;
      if (pg->rank() == 0) o = bench::run_peak_canary(omp_get_max_threads() * pg->size(), rounds, job_cpus);
      pg->barrier();
      return o;
    };
    std::vector<bench::OutsidePeak> outside_peaks{outside(5)};  // before, between the steps, after
    const auto peak_before = peaks();
    std::shared_ptr<nn::Module> model = gpt;
    fsdp::FullyShardedDataParallel* sharded = nullptr;
    if (strategy == "ddp") {
      auto ddp = fsdp::DistributedDataParallel::wrap(
          gpt, pg, {.deterministic = deterministic, .micro_batches = deterministic ? pg->size() : 0});
      sharded = &ddp->engine();
      model = ddp;
    } else if (strategy != "local") {
      fsdp::FSDPOptions o;
      o.sharding_strategy = fsdp::parse_sharding_strategy(strategy);
      o.shard_group_size = shard_group_size;
      o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
      o.backward_prefetch = prefetch ? fsdp::BackwardPrefetch::BackwardPre : fsdp::BackwardPrefetch::None;
      o.forward_prefetch = prefetch;
      o.limit_all_gathers = limit_all_gathers;
      o.cpu_offload = {.offload_params = !offload_dir.empty(), .directory = offload_dir,
                       .read_ahead_bytes = static_cast<int64_t>(read_ahead_mb) << 20};
      o.deterministic = deterministic;
      o.micro_batches = deterministic ? pg->size() : 0;
      if (dtype == "bfloat16") o.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16};
      auto w = fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
      sharded = w.get();
      model = w;
    }
    if (deferred && !sharded) nn::materialize(*model);
    const double construction_rss = max_over_ranks(*pg, status_bytes("VmHWM"));  // peak so far: building and sharding
    optim::AdamW opt(model->named_parameters(),
                     {.lr = 1e-4, .state_dtype = state_dtype == "bfloat16" ? std::optional(kBFloat16) : std::nullopt});
    if (sharded && (offload_stream || offload_dir.empty() || optimizer_in_backward))
      sharded->register_optimizer(opt, {.in_backward = optimizer_in_backward});
    int64_t sent_before = 0;
    double io_read_before = 0, io_write_before = 0;
    double phase_s[3] = {0, 0, 0};  // forward, backward, optimizer step: rank 0's sums over the measured steps
    Generator g(7 + pg->rank());
    Tensor tokens = (rand({batch, seq + 1}, {}, &g) * 256.0).to(kLong);
    Tensor x = tokens.narrow(1, 0, seq).contiguous(), y = tokens.narrow(1, 1, seq).contiguous();
    std::vector<double> times, times_unchecked;
    ResidentPeaks resident;
    for (int64_t s = 1 - warmup; s < steps + 1; ++s) {  // s <= 0: warm-up steps
      const bool unchecked = ab_signature_checks && s > 0 && s % 2 == 0;
      pg->barrier();
      pg->set_signature_checks(!unchecked);  // every rank at the same point of its sequence
      if (s == 1) {
        if (sharded) sharded->wait_for_pending_gathers();
        reset_peak_memory();
        reset_peak_rss();
        if (sharded) sharded->reset_stats();
        sent_before = sharded ? sharded->bytes_sent() : 0;
        io_read_before = bench::process_io_bytes("read_bytes");
        io_write_before = bench::process_io_bytes("write_bytes");
      }
      pg->barrier();
      const auto t0 = std::chrono::steady_clock::now();
      Tensor logits = (*model)(x);
      Tensor loss = nn::functional::cross_entropy(logits.reshape({-1, 256}), y.reshape({-1}));
      const auto t1 = std::chrono::steady_clock::now();
      if (s > 0) resident.sample();
      opt.zero_grad();
      loss.backward();
      const auto t2 = std::chrono::steady_clock::now();
      if (s > 0) resident.sample();
      opt.step();
      const auto t3 = std::chrono::steady_clock::now();
      if (s > 0) resident.sample();
      if (s > 0) {
        phase_s[0] += std::chrono::duration<double>(t1 - t0).count();
        phase_s[1] += std::chrono::duration<double>(t2 - t1).count();
        phase_s[2] += std::chrono::duration<double>(t3 - t2).count();
      }
      pg->barrier();
      if (s > 0)
        (unchecked ? times_unchecked : times).push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (peak_every > 0 && s > 0 && s < steps && s % peak_every == 0) outside_peaks.push_back(outside(3));
    }
    pg->set_signature_checks(true);
    // Offload: what the steps moved to and from the disk (all ranks), and what the disk does
    // with every rank streaming at once, measured right after in the same directory.
    const double io_read = sum_over_ranks(*pg, bench::process_io_bytes("read_bytes") - io_read_before);
    const double io_write = sum_over_ranks(*pg, bench::process_io_bytes("write_bytes") - io_write_before);
    bench::DiskBandwidth disk;
    if (!offload_dir.empty()) {
      pg->barrier();
      const bench::DiskBandwidth mine = bench::measure_disk_bandwidth(offload_dir, 1LL << 30);
      disk.write_gbps = sum_over_ranks(*pg, mine.write_gbps);
      disk.read_gbps = sum_over_ranks(*pg, mine.read_gbps);
    }
    const auto peak_after = peaks();
    outside_peaks.push_back(outside(5));
    const std::vector<bench::OutsidePeak> outside_during(outside_peaks.begin() + 1, outside_peaks.end() - 1);
    std::sort(times.begin(), times.end());
    std::sort(times_unchecked.begin(), times_unchecked.end());
    if (ab_signature_checks && pg->rank() == 0 && !times_unchecked.empty())
      std::printf("{\"signature_checks\":\"ab\",\"checked_step_s\":%.4f,\"unchecked_step_s\":%.4f,\"ratio\":%.4f,"
                  "\"pairs\":%zu}\n", times[times.size() / 2], times_unchecked[times_unchecked.size() / 2],
                  times[times.size() / 2] / times_unchecked[times_unchecked.size() / 2], times_unchecked.size());
    const double peak = max_over_ranks(*pg, static_cast<double>(memory_stats().peak_bytes));
    const double peak_reserved = max_over_ranks(*pg, static_cast<double>(memory_stats().peak_reserved_bytes));
    const double rss = max_over_ranks(*pg, status_bytes("VmHWM"));
    const double anon = max_over_ranks(*pg, resident.anon), file = max_over_ranks(*pg, resident.file);
    // Activations are not in the formula: the peak over it is what they (and inputs) add.
    const fsdp::OptimizerFootprint footprint = fsdp::optimizer_footprint(opt, optimizer_in_backward);
    const fsdp::MemoryFormula formula = sharded ? fsdp::memory_formula(*sharded, footprint) : fsdp::MemoryFormula{};
    const double expected = sharded ? static_cast<double>(formula.total())
                                    : static_cast<double>(params) * (8.0 + 2.0 * static_cast<double>(footprint.state_bytes));
    // The plan: the formula and the activations' estimate, against the resident peak.
    const double activations = gpt_activation_bytes(n_layer, batch * seq, n_embd, dtype == "bfloat16" ? 2 : 4, checkpointing);
    const double plan = expected + activations;
    if (sharded) sharded->wait_for_pending_gathers();
    const double sent = sharded ? static_cast<double>(sharded->bytes_sent() - sent_before) / static_cast<double>(steps) : 0;
    const double sent_formula = sharded ? static_cast<double>(fsdp::bytes_sent_per_step(*sharded)) : 0;
    fsdp::FSDPStats st = sharded ? sharded->stats() : fsdp::FSDPStats{};
    const double offload_held = max_over_ranks(*pg, static_cast<double>(st.offload_peak_held_bytes));
    const double per_step = 1.0 / static_cast<double>(steps);
    const double offload_write_wait = max_over_ranks(*pg, st.offload_write_wait_seconds) * per_step;
    const double step_s = times[times.size() / 2];
    const double step_tokens = static_cast<double>(batch * seq * (strategy == "local" ? 1 : pg->size()));
    const double step_flops = step_tokens * flops_per_token;
    const double fma_peak = 0.5 * (peak_before.first + peak_after.first) / (strategy == "local" ? pg->size() : 1);
    const double bf16_peak = 0.5 * (peak_before.second + peak_after.second) / (strategy == "local" ? pg->size() : 1);
    const MfuVerdict verdict = judge_mfu(outside_peaks, 0.5 * (peak_before.first + peak_after.first),
                                        0.5 * (peak_before.second + peak_after.second), dtype == "bfloat16",
                                        static_cast<int>(times.size()), warmup);
    const double per_peak = strategy == "local" ? pg->size() : 1;
    double outside_fma = 0, outside_bf16 = 0;  // the mean of every outside sample's median
    for (const bench::OutsidePeak& o : outside_peaks) {
      outside_fma += o.fma.median / per_peak / static_cast<double>(outside_peaks.size());
      outside_bf16 += o.bf16.median / per_peak / static_cast<double>(outside_peaks.size());
    }
    const double achieved = step_flops / times[times.size() / 2] / 1e9;
    print_link_prediction(*pg, sharded, step_s);
    if (pg->rank() == 0)
      std::printf("{\"mfu\":\"outside\",\"measured_steps\":%zu,\"warmup_steps\":%lld,\"reliable\":%s,\"why_not\":\"%s\","
                  "\"outside_fma_before\":%s,\"outside_fma_during\":%s,\"outside_fma_after\":%s,\"outside_bf16_before\":%s,"
                  "\"outside_bf16_during\":%s,\"outside_bf16_after\":%s,\"outside_samples_during\":%zu,\"in_process_fma_gflops\":%s,\"in_process_bf16_gflops\":%s,"
                  "\"bf16_peak_unit\":\"%s\",\"outside_fma_gflops\":%s,"
                  "\"outside_bf16_gflops\":%s,\"mfu_fp32_outside\":%s,\"mfu_bf16_outside\":%s}\n",
                  times.size(), static_cast<long long>(warmup), verdict.reliable ? "true" : "false", verdict.why_not.c_str(),
                  describe(outside_peaks.front().fma).c_str(),
                  describe(summarize(outside_during, &bench::OutsidePeak::fma)).c_str(),
                  describe(outside_peaks.back().fma).c_str(), describe(outside_peaks.front().bf16).c_str(),
                  describe(summarize(outside_during, &bench::OutsidePeak::bf16)).c_str(),
                  describe(outside_peaks.back().bf16).c_str(), outside_during.size(),
                  bench::json_number(0.5 * (peak_before.first + peak_after.first), 1).c_str(),
                  bench::json_number(0.5 * (peak_before.second + peak_after.second), 1).c_str(),
                  std::string(bench::peak_isa()) == "amx_bf16" ? "amx" : "vector",
                  bench::json_number(outside_fma, 1).c_str(), bench::json_number(outside_bf16, 1).c_str(),
                  bench::json_number(verdict.reliable ? achieved / outside_fma : 0.0).c_str(),
                  bench::json_number(verdict.reliable ? achieved / outside_bf16 : 0.0).c_str());
    if (pg->rank() == 0)
      std::printf("{\"strategy\":\"%s\",\"ranks\":%d,\"params\":%lld,\"batch\":%lld,\"seq\":%lld,\"step_s\":%.3f,\"peak_bytes\":%.0f,\"peak_reserved_bytes\":%.0f,"
                  "\"formula_bytes\":%.0f,\"peak_over_formula\":%.3f,\"peak_rss_bytes\":%.0f,\"rss_anon_bytes\":%.0f,\"rss_anon_base_bytes\":%.0f,"
                  "\"rss_file_bytes\":%.0f,\"prefetch\":%d,\"limit_all_gathers\":%d,"
                  "\"offload\":%d,\"optimizer_in_backward\":%d,\"state_dtype\":\"%s\",\"copied_bytes_per_step\":%.0f,\"copy_s_per_step\":%.3f,"
                  "\"gather_wait_s_per_step\":%.3f,\"reduce_wait_s_per_step\":%.3f,\"sent_bytes_per_step\":%.0f,"
                  "\"sent_formula_bytes\":%.0f,\"shard_group_size\":%d,\"deterministic\":%d,\"deferred_init\":%d,"
                  "\"construction_peak_rss_bytes\":%.0f,\"dtype\":\"%s\",\"activation_checkpointing\":%d,"
                  "\"tokens_per_s\":%.1f,\"model_gflop_per_step\":%.1f,\"achieved_gflops\":%.1f,"
                  "\"isa\":\"%s\",\"peak_isa\":\"%s\",\"fma_peak_gflops\":%s,\"bf16_peak_gflops\":%s,\"mfu_fp32_peak\":%s,\"mfu_bf16_peak\":%s,"
                  "\"disk_read_bytes_per_step\":%.0f,\"disk_write_bytes_per_step\":%.0f,\"disk_gbps_during_steps\":%.3f,"
                  "\"disk_write_gbps_measured\":%.3f,\"disk_read_gbps_measured\":%.3f,"
                  "\"activation_estimate_bytes\":%.0f,\"plan_bytes\":%.0f,\"plan_over_peak_rss\":%.3f,"
                  "\"offload_peak_held_bytes\":%lld,\"formula_offload_resident_bytes\":%lld,\"formula_gradient_bytes\":%lld,\"formula_working_bytes\":%lld,\"offload_write_wait_s_per_step\":%.3f,\"forward_s_per_step\":%.3f,\"backward_s_per_step\":%.3f,\"optimizer_s_per_step\":%.3f}\n",
                  strategy.c_str(), pg->size(), static_cast<long long>(params), static_cast<long long>(batch),
                  static_cast<long long>(seq), times[times.size() / 2], peak, peak_reserved,
                  expected, peak / expected, rss, anon, base_anon, file, prefetch ? 1 : 0, limit_all_gathers, offload_dir.empty() ? 0 : 1,
                  optimizer_in_backward ? 1 : 0, state_dtype.c_str(),
                  static_cast<double>(st.copied_bytes) * per_step, st.copy_seconds * per_step,
                  st.gather_wait_seconds * per_step, st.reduce_wait_seconds * per_step, sent, sent_formula,
                  shard_group_size, deterministic ? 1 : 0, deferred ? 1 : 0, construction_rss, dtype.c_str(),
                  checkpointing ? 1 : 0, step_tokens / step_s, step_flops / 1e9, step_flops / step_s / 1e9, cpu_isa_name().c_str(), bench::peak_isa(),
                  bench::json_number(fma_peak, 1).c_str(), bench::json_number(bf16_peak, 1).c_str(),
                  bench::json_number(fma_peak > 0 ? step_flops / step_s / 1e9 / fma_peak : 0.0).c_str(),
                  bench::json_number(bf16_peak > 0 ? step_flops / step_s / 1e9 / bf16_peak : 0.0).c_str(),
                  io_read * per_step, io_write * per_step, (io_read + io_write) * per_step / step_s / 1e9,
                  disk.write_gbps, disk.read_gbps, activations, plan, plan / rss, static_cast<long long>(offload_held), static_cast<long long>(formula.offload_resident),
                  static_cast<long long>(formula.gradients), static_cast<long long>(formula.working), offload_write_wait, phase_s[0] * per_step, phase_s[1] * per_step, phase_s[2] * per_step);
    return 0;
  });
}
