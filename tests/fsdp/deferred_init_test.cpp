// Models that never exist whole: a GPT built under nn::DeferredInit and wrapped by FSDP (or
// DDP) at this world size gathers, under every strategy, to exactly the parameters one process
// materializes from the same seed; under FULL_SHARD the construction's peak memory stays within
// this rank's shards plus the largest unit plus a small constant, below the whole model.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

models::GPTConfig config() { return {.vocab_size = 64, .block_size = 16, .n_layer = 4, .n_head = 4, .n_embd = 256}; }

std::shared_ptr<models::GPT> deferred_gpt() {
  nn::DeferredInit deferred(42);
  return std::make_shared<models::GPT>(config());
}

std::shared_ptr<nn::Module> wrap(std::shared_ptr<nn::Module> m, const std::string& strategy,
                                 std::shared_ptr<dist::ProcessGroup> pg, fsdp::FullyShardedDataParallel** engine) {
  if (strategy == "ddp") {
    auto d = fsdp::DistributedDataParallel::wrap(m, pg, {});
    *engine = &d->engine();
    return d;
  }
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.sharding_strategy = fsdp::parse_sharding_strategy(strategy);
  if (strategy.rfind("hybrid", 0) == 0) o.shard_group_size = 2;
  auto f = fsdp::FullyShardedDataParallel::wrap(m, pg, o);
  *engine = f.get();
  return f;
}

TEST(DeferredInitFsdp, GatheredParametersEqualOneProcessMaterializingBitwise) {
  auto& pg = testing::world();
  auto reference = deferred_gpt();
  nn::materialize(*reference);
  const auto want = reference->state_dict();
  std::vector<std::string> strategies = {"full_shard", "shard_grad_op", "shard_optimizer", "no_shard", "ddp"};
  if (pg->size() % 2 == 0) strategies.push_back("hybrid_shard");
  for (const std::string& strategy : strategies) {
    SCOPED_TRACE(strategy + " at " + std::to_string(pg->size()) + " ranks");
    fsdp::FullyShardedDataParallel* engine = nullptr;
    auto model = wrap(deferred_gpt(), strategy, pg, &engine);
    const auto got = engine->full_state_dict();
    ASSERT_EQ(got.size(), want.size());
    for (auto& [name, t] : want) EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
    // It trains like any model.
    Tensor loss = nn::functional::cross_entropy((*model)(zeros({2, 8}, kLong)).reshape({-1, 64}), zeros({16}, kLong));
    loss.backward();
    EXPECT_TRUE(std::isfinite(loss.item<float>()));
  }
}

TEST(DeferredInitFsdp, FullShardConstructionHoldsShardsPlusOneUnit) {
  auto& pg = testing::world();
  empty_cache();
  const int64_t before = memory_stats().current_bytes;
  reset_peak_memory();
  fsdp::FullyShardedDataParallel* engine = nullptr;
  auto model = wrap(deferred_gpt(), "full_shard", pg, &engine);
  const int64_t peak = memory_stats().peak_bytes - before;
  int64_t shard_bytes = 0;
  for (auto& [name, p] : model->named_parameters()) shard_bytes += p.numel() * 4;
  const int64_t bound = shard_bytes + engine->largest_unit_bytes() + (int64_t{1} << 20);
  int64_t whole = 0;
  for (auto& [name, p] : deferred_gpt()->named_parameters()) whole += p.numel() * 4;
  EXPECT_LE(peak, bound) << "shards " << shard_bytes << ", largest unit " << engine->largest_unit_bytes();
  if (pg->size() > 1) EXPECT_LT(bound, whole);  // the bound says something: less than the model
  std::cout << "rank " << pg->rank() << ": construction peak " << peak << " bytes; shards " << shard_bytes
            << ", largest unit " << engine->largest_unit_bytes() << ", whole model " << whole << "\n";
}

}  // namespace
}  // namespace strider
