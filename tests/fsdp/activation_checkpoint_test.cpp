// Activation checkpointing under FSDP and DDP: with the GPT's blocks checkpointed (dropout on),
// losses, gradients and parameters after the steps equal, bit for bit, those of the same run
// without checkpointing; and a checkpointed unit is gathered once for its recomputation and
// backward together, so a step makes as many all-gathers as without checkpointing.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/mpi_world.h"

namespace strider {
namespace {

using fsdp::ShardingStrategy;

struct TrainedRun {
  std::vector<double> losses;
  std::vector<std::pair<std::string, Tensor>> params, grads;
  int64_t all_gathers = 0;
};

// Blocks as FSDP units, or (wrap_blocks false) inside one unit that holds the whole model, whose
// gathered parameters the recomputation in backward must see again.
TrainedRun train(ShardingStrategy strategy, bool prefetch, bool checkpointed, bool checkpoint_after_wrap,
                 bool wrap_blocks = true) {
  auto& pg = testing::world();
  manual_seed(4);
  auto gpt = std::make_shared<models::GPT>(
      models::GPTConfig{.vocab_size = 32, .block_size = 8, .n_layer = 3, .n_head = 2, .n_embd = 16, .dropout = 0.2});
  auto is_block = [](nn::Module& m) { return m.type_name() == "Block"; };
  if (checkpointed && !checkpoint_after_wrap) nn::apply_activation_checkpointing(*gpt, is_block);
  fsdp::FSDPOptions o;
  o.sharding_strategy = strategy;
  if (wrap_blocks) o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.backward_prefetch = prefetch ? fsdp::BackwardPrefetch::BackwardPre : fsdp::BackwardPrefetch::None;
  o.forward_prefetch = prefetch;
  auto model = fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
  if (checkpointed && checkpoint_after_wrap) EXPECT_EQ(nn::apply_activation_checkpointing(*model, is_block), 3);
  optim::AdamW opt(model->named_parameters(), {.lr = 1e-2});
  model->register_optimizer(opt);
  TrainedRun r;
  for (int step = 0; step < 3; ++step) {
    Generator g(50 + step * 7 + pg->rank());
    Tensor tokens = (rand({2, 9}, {}, &g) * 32.0).to(kLong);
    manual_seed(1000 + step * 10 + pg->rank());  // dropout
    model->reset_stats();
    Tensor logits = (*model)(tokens.narrow(1, 0, 8).contiguous());
    Tensor loss = nn::functional::cross_entropy(logits.reshape({-1, 32}), tokens.narrow(1, 1, 8).contiguous().reshape({-1}));
    opt.zero_grad();
    loss.backward();
    r.all_gathers += model->stats().all_gathers;
    if (step == 2)
      for (auto& [name, p] : model->named_parameters()) r.grads.emplace_back(name, p.grad().clone());
    opt.step();
    r.losses.push_back(loss.item<double>());
  }
  for (auto& [name, p] : model->named_parameters()) r.params.emplace_back(name, p.detach().clone());
  return r;
}

TEST(ActivationCheckpointingFSDP, BitwiseTheSameStepsAndOneGatherPerUnitForRecomputeAndBackward) {
  for (ShardingStrategy s : {ShardingStrategy::FullShard, ShardingStrategy::ShardGradOp, ShardingStrategy::NoShard})
    for (bool prefetch : {false, true}) {
      const std::string what = fsdp::to_string(s) + (prefetch ? " prefetch" : "");
      const TrainedRun plain = train(s, prefetch, false, false);
      for (bool after_wrap : {false, true}) {
        const TrainedRun ckpt = train(s, prefetch, true, after_wrap);
        const std::string where = what + (after_wrap ? ", checkpointed after wrapping" : "");
        EXPECT_EQ(plain.losses, ckpt.losses) << where;
        EXPECT_EQ(plain.all_gathers, ckpt.all_gathers) << where;
        ASSERT_EQ(plain.params.size(), ckpt.params.size());
        for (size_t i = 0; i < plain.params.size(); ++i) {
          EXPECT_TRUE(equal(plain.grads[i].second, ckpt.grads[i].second)) << where << ": gradient of " << plain.grads[i].first;
          EXPECT_TRUE(equal(plain.params[i].second, ckpt.params[i].second)) << where << ": " << plain.params[i].first;
        }
      }
    }
}

TEST(ActivationCheckpointingFSDP, BlocksInsideOneUnitRecomputeWithItsGatheredParameters) {
  for (ShardingStrategy s : {ShardingStrategy::FullShard, ShardingStrategy::NoShard}) {
    const TrainedRun plain = train(s, false, false, false, false), ckpt = train(s, false, true, false, false);
    EXPECT_EQ(plain.losses, ckpt.losses) << fsdp::to_string(s);
    EXPECT_EQ(plain.all_gathers, ckpt.all_gathers) << fsdp::to_string(s);
    for (size_t i = 0; i < plain.params.size(); ++i)
      EXPECT_TRUE(equal(plain.params[i].second, ckpt.params[i].second)) << fsdp::to_string(s) << ": " << plain.params[i].first;
  }
}

}  // namespace
}  // namespace strider
