// Per-rank step time and peak memory of GPT training under local training, DDP and each FSDP
// strategy. Run under mpirun (or alone for "local"); prints one JSON line from rank 0.
//
//   mpirun -np 2 build/bench/strider_bench_fsdp --strategy full_shard --n-layer 12 --n-embd 768
#include <strider/strider.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace strider;

int main(int argc, char** argv) {
  std::string strategy = "full_shard";
  int64_t n_layer = 12, n_embd = 768, batch = 2, seq = 64, steps = 3;
  bool prefetch = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--strategy") strategy = v;
    if (k == "--n-layer") n_layer = std::stoll(v);
    if (k == "--n-embd") n_embd = std::stoll(v);
    if (k == "--batch") batch = std::stoll(v);  // per rank
    if (k == "--seq") seq = std::stoll(v);
    if (k == "--steps") steps = std::stoll(v);
    if (k == "--prefetch") prefetch = v == "1";
  }
  auto pg = dist::MpiProcessGroup::init(&argc, &argv);
  return dist::run_or_abort(pg, [&] {
    manual_seed(1);
    models::GPTConfig cfg{.vocab_size = 256, .block_size = seq, .n_layer = n_layer, .n_head = n_embd / 64, .n_embd = n_embd};
    auto gpt = std::make_shared<models::GPT>(cfg);
    const int64_t params = gpt->num_parameters();
    std::shared_ptr<nn::Module> model = gpt;
    fsdp::FullyShardedDataParallel* sharded = nullptr;
    if (strategy == "ddp") {
      model = fsdp::DistributedDataParallel::wrap(gpt, pg);
    } else if (strategy != "local") {
      fsdp::FSDPOptions o;
      o.sharding_strategy = strategy == "full_shard"      ? fsdp::ShardingStrategy::FullShard
                            : strategy == "shard_grad_op" ? fsdp::ShardingStrategy::ShardGradOp
                                                          : fsdp::ShardingStrategy::NoShard;
      o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
      o.backward_prefetch = prefetch ? fsdp::BackwardPrefetch::BackwardPre : fsdp::BackwardPrefetch::None;
      o.forward_prefetch = prefetch;
      auto w = fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
      sharded = w.get();
      model = w;
    }
    optim::AdamW opt(model->named_parameters(), {.lr = 1e-4, .decoupled_weight_decay = true});
    Generator g(7 + pg->rank());
    Tensor tokens = (rand({batch, seq + 1}, {}, &g) * 256.0).to(kLong);
    Tensor x = tokens.narrow(1, 0, seq).contiguous(), y = tokens.narrow(1, 1, seq).contiguous();
    std::vector<double> times;
    for (int64_t s = 0; s < steps + 1; ++s) {
      if (s == 1) reset_peak_memory();
      pg->barrier();
      const auto t0 = std::chrono::steady_clock::now();
      Tensor logits = (*model)(x);
      Tensor loss = nn::functional::cross_entropy(logits.reshape({-1, 256}), y.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
      pg->barrier();
      if (s > 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    Tensor peak = full({1}, static_cast<double>(memory_stats().peak_bytes), kDouble);
    pg->all_reduce(peak, dist::ReduceOp::Max);
    const double total = 16.0 * static_cast<double>(params);  // fp32 params + grads + Adam's 2 moments
    const double world = strategy == "full_shard" || strategy == "shard_grad_op" ? pg->size() : 1;
    const double expected = total / world + (sharded ? static_cast<double>(sharded->largest_unit_bytes()) : 0.0);
    if (pg->rank() == 0)
      std::printf("{\"strategy\":\"%s\",\"ranks\":%d,\"params\":%lld,\"step_s\":%.3f,\"peak_bytes\":%.0f,"
                  "\"formula_bytes\":%.0f,\"peak_over_formula\":%.3f,\"prefetch\":%d}\n",
                  strategy.c_str(), pg->size(), static_cast<long long>(params), times[times.size() / 2],
                  peak.item<double>(), expected, peak.item<double>() / expected, prefetch ? 1 : 0);
    return 0;
  });
}
