// Planned, not run: GPT-3 175B and a 1T GPT trained with each sharding strategy on a CPU cluster,
// from the cost model that the emulated-host runs check (bytes on the link, fsdp/cost_model.h)
// and the memory formula the benchmarks check (allocator peaks). Prints a markdown table of
// memory per rank, step time, MFU and what bounds the step, per model, link and strategy.
//   build/bench/strider_cluster_table [--nodes 128] [--ranks-per-node 2] [--cores-per-node 128]
//       [--core-bf16-gflops 526] [--mfu 0.66] [--node-gib 768] [--shard-group 32]
// Compute: the model's FLOPs at --mfu (measured on GPT-2-small under FULL_SHARD in bfloat16
// against the outside canary, docs/benchmarks.md issue 32 §2) of the nodes' bfloat16 peak
// (--core-bf16-gflops: this machine's `vdpbf16ps` canary per logical CPU, the same run). Each step is the global batch of GPT-3 (1536 x 2048 tokens) in micro-batches of
// one sequence per rank, each gathering and reducing its units again. Each phase of a
// micro-batch (forward, backward) takes max(its compute, its hidden link time) + its unhidden
// link time, as bench/link_table.py predicts measured steps.
#include <strider/strider.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace strider;

namespace {

struct Model {
  const char* name;
  int64_t layers, d, heads, vocab, seq;
  double params() const { return static_cast<double>(layers) * (12.0 * d * d + 13.0 * d) + double(vocab + seq) * d; }
  // 6 x (12 L d^2 + V d) + 12 L d T per token (attention's scores and their use).
  double flops_per_token() const {
    return 6.0 * (12.0 * layers * d * d + double(vocab) * d) + 12.0 * layers * d * seq;
  }
};

struct Cluster {
  int nodes = 128, ranks_per_node = 2, cores_per_node = 128, shard_group = 32;
  double core_bf16_gflops = 526, mfu = 0.66, node_gib = 768;
  int ranks() const { return nodes * ranks_per_node; }
  double node_flops() const { return cores_per_node * core_bf16_gflops * 1e9 * mfu; }
};

// One unit per transformer block and a root holding the embeddings and the final norm, as
// auto-wrapping makes them; bfloat16 compute, float32 reduction.
std::vector<fsdp::UnitLayout> units_of(const Model& m, fsdp::ShardingStrategy s, const Cluster& c) {
  std::vector<fsdp::UnitLayout> units;
  const std::vector<DimVector> block = {{3 * m.d, m.d}, {3 * m.d}, {m.d, m.d}, {m.d}, {4 * m.d, m.d}, {4 * m.d},
                                        {m.d, 4 * m.d}, {m.d}, {m.d}, {m.d}, {m.d}, {m.d}};
  for (int64_t l = 0; l < m.layers; ++l)
    units.push_back(fsdp::planned_unit_layout(s, block, c.ranks(), c.shard_group, false, 2, 4));
  units.push_back(fsdp::planned_unit_layout(s, {{m.vocab, m.d}, {m.seq, m.d}, {m.d}, {m.d}}, c.ranks(),
                                            c.shard_group, true, 2, 4));
  return units;
}

// Activations of one micro-batch (one sequence) with each block checkpointed: the blocks' inputs
// in bfloat16, and one block recomputed at a time (34 s d bytes and 5 heads s^2 for attention:
// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models").
double activation_bytes(const Model& m) {
  const double s = static_cast<double>(m.seq), d = static_cast<double>(m.d);
  return m.layers * s * d * 2 + 34 * s * d + 5.0 * m.heads * s * s;
}

struct Row {
  std::string strategy;
  double memory_gib, step_s, mfu, link_s, compute_s;
  bool fits;
};

Row plan(const Model& m, fsdp::ShardingStrategy s, const Cluster& c, double link_gbit) {
  const std::vector<fsdp::UnitLayout> units = units_of(m, s, c);
  const double memory = static_cast<double>(fsdp::memory_formula(units, 2, 1).total()) + activation_bytes(m);
  const double rate = link_gbit * 1e9 / 8;
  const fsdp::LinkTraffic link = fsdp::link_traffic_per_step(units, c.ranks_per_node, 0);
  const double bytes = static_cast<double>(link.total());
  const int64_t global_sequences = 1536, micro_batches = std::max<int64_t>(1, global_sequences / c.ranks());
  const double node_tokens = static_cast<double>(micro_batches * c.ranks_per_node * m.seq);
  const double compute = node_tokens * m.flops_per_token() / c.node_flops() / micro_batches;  // per micro-batch
  // Forward is a third of the compute, backward two thirds; each phase's traffic overlaps only
  // its own phase's compute.
  auto phase = [&](double seconds, int64_t sent, int64_t unhidden) {
    return std::max(seconds, static_cast<double>(sent - unhidden) / rate) + static_cast<double>(unhidden) / rate;
  };
  const double micro = phase(compute / 3, link.forward, link.unhidden_forward) +
                       phase(2 * compute / 3, link.backward, link.unhidden_backward);
  const double step = micro * micro_batches;
  const double model_flops = double(global_sequences) * m.seq * m.flops_per_token();
  const double peak = c.nodes * c.cores_per_node * c.core_bf16_gflops * 1e9;
  const double per_rank_gib = memory / (1ull << 30);
  return {fsdp::to_string(s), per_rank_gib, step, model_flops / step / peak, bytes / rate * micro_batches,
          compute * micro_batches, per_rank_gib * c.ranks_per_node <= c.node_gib};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Cluster c;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string k = argv[i];
      const double v = std::stod(argv[i + 1]);
      if (k == "--nodes") c.nodes = static_cast<int>(v);
      else if (k == "--ranks-per-node") c.ranks_per_node = static_cast<int>(v);
      else if (k == "--cores-per-node") c.cores_per_node = static_cast<int>(v);
      else if (k == "--core-bf16-gflops") c.core_bf16_gflops = v;
      else if (k == "--mfu") c.mfu = v;
      else if (k == "--node-gib") c.node_gib = v;
      else if (k == "--shard-group") c.shard_group = static_cast<int>(v);
      else throw Error("strider_cluster_table: unknown flag " + k);
    }
    const Model models[] = {{"GPT-3 175B", 96, 12288, 96, 50257, 2048}, {"GPT 1T", 128, 25600, 160, 51200, 2048}};
    std::printf("%d nodes x %d ranks, %d cores per node at %.0f GFLOP/s bf16 each, %.0f%% MFU in compute, %.0f GiB "
                "per node; hybrid shard groups of %d ranks\n\n",
                c.nodes, c.ranks_per_node, c.cores_per_node, c.core_bf16_gflops, 100 * c.mfu, c.node_gib,
                c.shard_group);
    std::printf("| model | link | strategy | memory per rank | fits | step | of which compute | link busy | MFU |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    for (const Model& m : models)
      for (double gbit : {25.0, 100.0, 200.0, 400.0}) {
        std::vector<Row> rows;
        for (const std::string& name : {"full_shard", "shard_grad_op", "hybrid_shard", "shard_optimizer", "no_shard"})
          rows.push_back(plan(m, fsdp::parse_sharding_strategy(name), c, gbit));
        const Row* best = nullptr;
        for (const Row& r : rows)
          if (r.fits && (!best || r.step_s < best->step_s)) best = &r;
        for (const Row& r : rows)
          std::printf("| %s | %.0f Gbit/s | %s%s | %.0f GiB | %s | %.0f s | %.0f s | %.0f s | %s |\n", m.name, gbit,
                      &r == best ? "**" : "", (r.strategy + (&r == best ? "**" : "")).c_str(), r.memory_gib,
                      r.fits ? "yes" : "no", r.step_s, r.compute_s, r.link_s,
                      r.fits ? (std::to_string(static_cast<int>(100 * r.mfu + 0.5)) + "%").c_str() : "-");
      }
    std::printf("\n(%.0fB and %.0fB parameters.)\n", models[0].params() / 1e9, models[1].params() / 1e9);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strider_cluster_table: %s\n", e.what());
    return 2;
  }
}
