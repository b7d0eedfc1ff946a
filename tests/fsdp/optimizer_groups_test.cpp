// Param groups under data parallelism: SGD with per-group weight decay and lr and OneCycleLR's
// momentum cycling trains the sharded model as one process trains the whole one, for FSDP's
// plans; a checkpoint of a sharded run carries each parameter's own step count.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

// Weights decayed, biases (every parameter of fewer than 2 dims) not and at half the lr.
std::unique_ptr<optim::Optimizer> grouped_sgd(const optim::NamedParameters& params) {
  optim::NamedParameters decay, no_decay;
  for (auto& [name, p] : params) (p.dim() < 2 ? no_decay : decay).emplace_back(name, p);
  return optim::make_optimizer(
      "sgd", {{.params = decay}, {.params = no_decay, .options = {.lr = 0.025, .weight_decay = 0.0}}},
      {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01});
}

TEST(OptimizerGroupsDist, ShardedTrainingMatchesOneProcess) {
  auto& pg = testing::world();
  for (auto strategy : {fsdp::ShardingStrategy::FullShard, fsdp::ShardingStrategy::ShardOptimizer}) {
    SCOPED_TRACE(fsdp::to_string(strategy));
    manual_seed(7);
    auto local = models::small_cnn(10, 1);
    manual_seed(7);
    fsdp::FSDPOptions o;
    o.sharding_strategy = strategy;
    auto sharded = fsdp::FullyShardedDataParallel::wrap(models::small_cnn(10, 1), pg, o);
    auto local_opt = grouped_sgd(local->named_parameters());
    auto sharded_opt = grouped_sgd(sharded->named_parameters());
    sharded->register_optimizer(*sharded_opt);
    optim::OneCycleLR local_sched(*local_opt, {.max_lr = {0.1, 0.05}, .total_steps = 4});
    optim::OneCycleLR sharded_sched(*sharded_opt, {.max_lr = {0.1, 0.05}, .total_steps = 4});
    const int64_t per_rank = 12 / pg->size();
    for (int step = 0; step < 3; ++step) {
      Generator g(300 + step);
      const Tensor x = randn({12, 1, 28, 28}, {}, &g), y = (rand({12}, {}, &g) * 10.0).to(kLong);
      Tensor loss = nn::functional::cross_entropy((*local)(x), y);
      local_opt->zero_grad();
      loss.backward();
      local_opt->step();
      local_sched.step();
      Tensor part = nn::functional::cross_entropy((*sharded)(x.narrow(0, pg->rank() * per_rank, per_rank).contiguous()),
                                                  y.narrow(0, pg->rank() * per_rank, per_rank).contiguous());
      sharded_opt->zero_grad();
      part.backward();
      sharded_opt->step();
      sharded_sched.step();
    }
    EXPECT_EQ(sharded_opt->param_group_options(1).momentum, local_opt->param_group_options(1).momentum);
    const auto got = sharded->full_state_dict();
    for (auto& [name, t] : local->state_dict()) EXPECT_TRUE(testing::all_close(got.at(name), t, 1e-4, 1e-6)) << name;
  }
}

TEST(OptimizerGroupsDist, ShardedCheckpointCarriesPerParameterStepCounts) {
  auto& pg = testing::world();
  const std::string dir = dist::all_gather_strings(
      *pg, "test dir",
      (std::filesystem::temp_directory_path() / ("strider_groups_" + std::to_string(::getpid()))).string())[0];
  auto train = [&](fsdp::FullyShardedDataParallel& model, optim::Optimizer& opt, int steps, const std::string& skip) {
    for (int step = 0; step < steps; ++step) {
      Generator g(400 + step);
      Tensor loss = nn::functional::cross_entropy(model(randn({4, 1, 28, 28}, {}, &g)),
                                                  (rand({4}, {}, &g) * 10.0).to(kLong));
      opt.zero_grad();
      loss.backward();
      if (step == 0)
        for (auto& [name, p] : model.named_parameters())
          if (name == skip) p.set_grad(Tensor());  // on every rank: this parameter sits the step out
      opt.step();
    }
  };
  manual_seed(3);
  auto a = fsdp::FullyShardedDataParallel::wrap(models::small_cnn(10, 1), pg, {});
  optim::AdamW opt_a(a->named_parameters(), {.lr = 1e-2});
  a->register_optimizer(opt_a);
  const std::string skip = a->named_parameters().back().first;
  train(*a, opt_a, 3, skip);
  checkpoint::Checkpointer(dir, pg).save(3, {.model = a.get(), .optimizer = &opt_a});
  EXPECT_EQ(opt_a.param_steps_differing(), (std::map<std::string, int64_t>{{skip, 2}}));

  manual_seed(4);
  auto b = fsdp::FullyShardedDataParallel::wrap(models::small_cnn(10, 1), pg, {});
  optim::AdamW opt_b(b->named_parameters(), {.lr = 1e-2});
  b->register_optimizer(opt_b);
  checkpoint::load(dir, {.model = b.get(), .optimizer = &opt_b}, pg.get());
  EXPECT_EQ(opt_b.param_steps_differing(), opt_a.param_steps_differing());
  train(*a, opt_a, 1, "");
  train(*b, opt_b, 1, "");
  const auto want = a->full_state_dict(), got = b->full_state_dict();
  for (auto& [name, t] : want) EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
  pg->barrier();
  if (pg->rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strider
