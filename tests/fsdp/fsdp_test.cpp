// FSDP and DDP on N ranks against single-process training on the same global batch: every
// strategy, with and without prefetch and nested wrapping, for the small CNN and the GPT. Also
// mixed precision, offload, gradient accumulation, clipping, channels-last and per-rank memory.
#include <gtest/gtest.h>
#include <strider/strider.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

using fsdp::FSDPOptions;
using fsdp::ShardingStrategy;

struct Batch {
  Tensor x, y;
};

struct Workload {
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<Batch(int step)> batch;  // the global batch of a step (same on every rank)
  std::function<Tensor(const Tensor& out, const Tensor& y)> loss;
};

Workload cnn_workload(MemoryFormat fmt = MemoryFormat::Contiguous) {
  return {[fmt] {
            auto m = models::small_cnn();
            if (fmt != MemoryFormat::Contiguous) m->to(fmt);
            return std::shared_ptr<nn::Module>(m);
          },
          [fmt](int step) {
            Generator g(100 + step);
            Tensor x = randn({12, 1, 28, 28}, {}, &g).contiguous(fmt);
            Tensor y = (rand({12}, {}, &g) * 10.0).to(kLong);
            return Batch{x, y};
          },
          [](const Tensor& out, const Tensor& y) { return nn::functional::cross_entropy(out, y); }};
}

models::GPTConfig tiny_gpt() { return {.vocab_size = 32, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 16}; }

Workload gpt_workload() {
  return {[] { return std::shared_ptr<nn::Module>(std::make_shared<models::GPT>(tiny_gpt())); },
          [](int step) {
            Generator g(200 + step);
            Tensor tokens = (rand({12, 9}, {}, &g) * 32.0).to(kLong);
            return Batch{tokens.narrow(1, 0, 8).contiguous(), tokens.narrow(1, 1, 8).contiguous()};
          },
          [](const Tensor& out, const Tensor& y) {
            return nn::functional::cross_entropy(out.reshape({-1, out.size(2)}), y.reshape({-1}));
          }};
}

// a -> b -> c, with b left out of the forward of step 1: b's parameters get no gradient in that
// step, so AdamW must leave them alone (no decay, no moment update), as in one process.
bool g_skip_middle = false;

class SkipsMiddle : public nn::Module {
 public:
  SkipsMiddle() : Module("SkipsMiddle") {
    a_ = register_module("a", std::make_shared<nn::Linear>(6, 8));
    b_ = register_module("b", std::make_shared<nn::Linear>(8, 8));
    c_ = register_module("c", std::make_shared<nn::Linear>(8, 4));
  }
  using nn::Module::forward;
  Tensor forward(const Tensor& x) override {
    Tensor h = relu((*a_)(x));
    if (!g_skip_middle) h = relu((*b_)(h));
    return (*c_)(h);
  }

 private:
  std::shared_ptr<nn::Module> a_, b_, c_;
};

Workload skips_middle_workload() {
  return {[] { return std::shared_ptr<nn::Module>(std::make_shared<SkipsMiddle>()); },
          [](int step) {
            g_skip_middle = step == 1;
            Generator g(300 + step);
            return Batch{randn({12, 6}, {}, &g), (rand({12}, {}, &g) * 4.0).to(kLong)};
          },
          [](const Tensor& out, const Tensor& y) { return nn::functional::cross_entropy(out, y); }};
}

// A language model whose output layer is its embedding (head.weight = emb.weight), with a
// block between them: the tied weight gets both uses' gradients, once.
class TiedLm : public nn::Module {
 public:
  TiedLm() : Module("TiedLm") {
    emb_ = register_module("emb", std::make_shared<nn::Embedding>(11, 6));
    block_ = register_module("block", std::make_shared<nn::Linear>(6, 6));
    head_ = register_module("head", std::make_shared<nn::Linear>(6, 11, /*bias=*/false));
    head_->set_param("weight", emb_->param("weight"));
  }
  using nn::Module::forward;
  Tensor forward(const Tensor& ids) override { return (*head_)(tanh((*block_)((*emb_)(ids)))); }

 private:
  std::shared_ptr<nn::Module> emb_, block_, head_;
};

Workload tied_workload() {
  return {[] { return std::shared_ptr<nn::Module>(std::make_shared<TiedLm>()); },
          [](int step) {
            Generator g(400 + step);
            return Batch{(rand({12}, {}, &g) * 11.0).to(kLong), (rand({12}, {}, &g) * 11.0).to(kLong)};
          },
          [](const Tensor& out, const Tensor& y) { return nn::functional::cross_entropy(out, y); }};
}

// This rank's slice of the global batch.
Tensor local_slice(const Tensor& t) {
  auto& pg = testing::world();
  const int64_t b = t.size(0) / pg->size();
  return t.narrow(0, pg->rank() * b, b).contiguous(t.suggest_memory_format());
}

// Adam divides by the root of the squared gradient, so an element whose gradient is rounding
// noise (sums in another order; 1/3 is inexact at 3 ranks) moves by up to lr either way. eps is
// 1e-6 (PyTorch's default 1e-8) so such elements stay put, and parameters are compared through
// their change: the difference's norm within rtol of the change's norm (a wrong row or shard
// stands out) plus float32's resolution of the values, and no element further than one step
// (lr) away. Bitwise equality across world
// sizes is the deterministic mode's (fsdp_deterministic_test.cpp).
::testing::AssertionResult updates_close(const Tensor& got, const Tensor& want, const Tensor& initial, double rtol) {
  const Tensor g = got.to(kDouble), w = want.to(kDouble), i = initial.to(kDouble);
  const double err = std::sqrt(((g - w) * (g - w)).sum().item<double>());
  const double moved = std::sqrt(((w - i) * (w - i)).sum().item<double>());
  const double rounding = std::sqrt((w * w).sum().item<double>()) * 0x1p-23;  // float32's own resolution
  if (err > rtol * moved + rounding)
    return ::testing::AssertionFailure() << "differs by " << err << " in norm, but training moved it by " << moved;
  return testing::all_close(got, want, 0, 1e-3 /* lr */);
}

optim::AdamWOptions adam() { return {.lr = 1e-3, .eps = 1e-6, .weight_decay = 0.01}; }

// K steps of local training on the global batch (12 samples: it splits evenly over 1 to 4 ranks),
// and of `wrapped` on this rank's slice; losses
// and final parameters must agree.
void expect_equivalent(const Workload& w, const std::function<std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>)>& wrap,
                       double rtol, int steps = 3, bool register_optimizer = true, bool in_backward = false) {
  auto& pg = testing::world();
  manual_seed(7);
  auto local = w.make();
  std::map<std::string, Tensor> initial;
  for (auto& [name, t] : local->state_dict()) initial[name] = t.clone();
  manual_seed(7);
  auto sharded = wrap(w.make());
  optim::AdamW local_opt(local->named_parameters(), adam());
  optim::AdamW sharded_opt(sharded->named_parameters(), adam());
  if (register_optimizer)
    if (auto* f = dynamic_cast<fsdp::FullyShardedDataParallel*>(sharded.get()))
      f->register_optimizer(sharded_opt, {.in_backward = in_backward});
  for (int step = 0; step < steps; ++step) {
    Batch b = w.batch(step);
    Tensor local_loss = w.loss((*local)(b.x), b.y);
    local_opt.zero_grad();
    local_loss.backward();
    local_opt.step();

    Tensor loss = w.loss((*sharded)(local_slice(b.x)), local_slice(b.y));
    sharded_opt.zero_grad();
    loss.backward();
    sharded_opt.step();
    Tensor global = loss.detach().to(kDouble).reshape({1}).clone();
    pg->all_reduce(global, dist::ReduceOp::Avg);
    EXPECT_NEAR(global.item<double>(), local_loss.item<double>(), rtol * std::abs(local_loss.item<double>()))
        << "loss of step " << step;
  }
  std::map<std::string, Tensor> got;
  if (auto* f = dynamic_cast<fsdp::FullyShardedDataParallel*>(sharded.get()))
    got = f->full_state_dict();
  else
    got = sharded->state_dict();
  auto want = local->state_dict();
  ASSERT_EQ(got.size(), want.size());
  for (auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(updates_close(got[name], t, initial[name], rtol)) << name;
  }
}

std::function<std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>)> fsdp_wrapper(FSDPOptions o) {
  return [o](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::FullyShardedDataParallel::wrap(std::move(m), testing::world(), o);
  };
}

struct Config {
  ShardingStrategy strategy;
  bool prefetch, nested;
};

std::string describe(const Config& c) {
  return fsdp::to_string(c.strategy) + (c.prefetch ? " prefetch" : "") + (c.nested ? " nested" : "");
}

constexpr ShardingStrategy kStrategies[] = {ShardingStrategy::FullShard,      ShardingStrategy::ShardGradOp,
                                            ShardingStrategy::NoShard,        ShardingStrategy::ShardOptimizer,
                                            ShardingStrategy::HybridShard,    ShardingStrategy::HybridShardGradOp};

// Every strategy plain and with prefetch over nested units; FullShard (the strategy that gathers
// most) in all four combinations.
std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (auto s : kStrategies) {
    out.push_back({s, false, false});
    out.push_back({s, true, true});
  }
  out.push_back({ShardingStrategy::FullShard, false, true});
  out.push_back({ShardingStrategy::FullShard, true, false});
  return out;
}

// Hybrid layouts exercised: 2 x 2 on 4 ranks, 1 x 2 on 2, and 3 replicas of unsplit shards on 3.
int hybrid_group_size() {
  const int n = testing::world()->size();
  return n % 2 == 0 ? std::max(1, n / 2) : 1;
}

FSDPOptions options_for(const Config& c, fsdp::AutoWrapPolicy nested_policy) {
  FSDPOptions o;
  o.sharding_strategy = c.strategy;
  o.shard_group_size = hybrid_group_size();
  o.backward_prefetch = c.prefetch ? fsdp::BackwardPrefetch::BackwardPre : fsdp::BackwardPrefetch::None;
  o.forward_prefetch = c.prefetch;
  if (c.nested) o.auto_wrap_policy = std::move(nested_policy);
  return o;
}

TEST(FSDPEquivalence, SmallCnnEveryStrategy) {
  for (const Config& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    expect_equivalent(cnn_workload(), fsdp_wrapper(options_for(c, fsdp::size_based_auto_wrap_policy(1000))), 1e-5);
  }
}

TEST(FSDPEquivalence, GptEveryStrategy) {
  for (const Config& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    expect_equivalent(gpt_workload(), fsdp_wrapper(options_for(c, fsdp::module_type_auto_wrap_policy({"Block"}))), 1e-5);
  }
}

// A tree whose units differ in strategy: blocks sharded one way, the rest (embeddings, head)
// another; every pairing of the unit's and the root's plans must train like one process.
TEST(FSDPEquivalence, MixedStrategiesPerUnit) {
  const std::pair<ShardingStrategy, ShardingStrategy> mixes[] = {
      {ShardingStrategy::FullShard, ShardingStrategy::NoShard},
      {ShardingStrategy::ShardOptimizer, ShardingStrategy::FullShard},
      {ShardingStrategy::HybridShard, ShardingStrategy::ShardGradOp},
      {ShardingStrategy::NoShard, ShardingStrategy::HybridShardGradOp}};
  for (auto [blocks, rest] : mixes) {
    SCOPED_TRACE("blocks " + fsdp::to_string(blocks) + ", rest " + fsdp::to_string(rest));
    FSDPOptions o;
    o.sharding_strategy = rest;
    o.shard_group_size = hybrid_group_size();
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
    const ShardingStrategy block_strategy = blocks;
    o.unit_strategy = [block_strategy](const nn::Module& m) -> std::optional<ShardingStrategy> {
      if (m.type_name() == "Block") return block_strategy;
      return std::nullopt;
    };
    expect_equivalent(gpt_workload(), fsdp_wrapper(o), 1e-5);
  }
}

// ZeRO-1 without register_optimizer: the units notice their shards changed and gather them at
// the next forward instead of right after the step.
TEST(FSDPEquivalence, ShardOptimizerWithoutTheStepHook) {
  FSDPOptions o;
  o.sharding_strategy = ShardingStrategy::ShardOptimizer;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  expect_equivalent(gpt_workload(), fsdp_wrapper(o), 1e-5, 3, /*register_optimizer=*/false);
}

// Hand-wrapped units keep the strategy of the enable_wrap scope that made them.
TEST(FSDPEquivalence, ManualWrapWithDifferentStrategies) {
  auto make = [] {
    manual_seed(7);
    return models::small_cnn();
  };
  auto wrap_by_hand = [&](std::shared_ptr<nn::Module>) -> std::shared_ptr<nn::Module> {
    auto cnn = make();
    auto seq = std::make_shared<nn::Sequential>();
    int i = 0;
    for (auto& [name, child] : cnn->named_children()) {
      FSDPOptions o;
      o.sharding_strategy = kStrategies[i++ % std::size(kStrategies)];
      o.shard_group_size = hybrid_group_size();
      fsdp::enable_wrap scope(testing::world(), o);
      seq->push_back(child->num_parameters() > 0 ? fsdp::wrap(child) : child);
    }
    return fsdp::FullyShardedDataParallel::wrap(seq, testing::world(), {});
  };
  Workload w = cnn_workload();
  w.make = [&] { return std::shared_ptr<nn::Module>(make()); };
  expect_equivalent(w, wrap_by_hand, 1e-5);
}

// Wrappers nested three deep by hand (FSDP(FSDP(FSDP(conv), relu), ...)): the outermost adopts
// the units its child adopted too (the innermost unit was lost, and its forward failed).
TEST(FSDPEquivalence, ThreeLevelsOfHandWrapping) {
  auto children = [] {
    manual_seed(7);
    std::vector<std::shared_ptr<nn::Module>> out;
    for (auto& [name, child] : models::small_cnn()->named_children()) out.push_back(child);
    return out;
  };
  auto nest = [](std::vector<std::shared_ptr<nn::Module>> c, const std::function<std::shared_ptr<nn::Module>(
                                                                  std::shared_ptr<nn::Module>)>& wrap) {
    auto inner = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{wrap(c[0]), c[1]});
    auto outer = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{wrap(inner)});
    for (size_t i = 2; i < c.size(); ++i) outer->push_back(c[i]);
    return outer;
  };
  auto same = [](std::shared_ptr<nn::Module> m) { return m; };
  auto fsdp_unit = [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::FullyShardedDataParallel::wrap(std::move(m), testing::world(), {});
  };
  Workload w = cnn_workload();
  w.make = [&] { return std::shared_ptr<nn::Module>(nest(children(), same)); };
  auto three_levels = [&](std::shared_ptr<nn::Module>) -> std::shared_ptr<nn::Module> {
    auto root = fsdp::FullyShardedDataParallel::wrap(nest(children(), fsdp_unit), testing::world(), {});
    EXPECT_EQ(root->num_units(), 3);
    return root;
  };
  expect_equivalent(w, three_levels, 1e-5);
}

// A tied weight trains as in one process under every strategy and under DDP, with the wrapper's
// clipping counting it once, and its state dict names it under both names, as a plain module's.
// (Its second slot kept the tensor from before the wrap, so forward failed; DDP clipped it twice.)
TEST(FSDPEquivalence, ATiedWeightInOneUnit) {
  auto check_dict = [](std::shared_ptr<nn::Module> m) {
    const auto sd = m->state_dict();
    EXPECT_TRUE(sd.count("emb.weight") && sd.count("head.weight"));
    EXPECT_NO_THROW(TiedLm().load_state_dict(sd));  // a plain model takes it, strictly
    EXPECT_TRUE(m->load_state_dict(sd).empty());
    if (auto* f = dynamic_cast<fsdp::FullyShardedDataParallel*>(m.get())) {
      auto first_names_only = sd;  // as an export of its shards holds it
      first_names_only.erase("head.weight");
      EXPECT_TRUE(f->load_state_dict(first_names_only).empty());
    }
  };
  for (auto s : kStrategies) {
    SCOPED_TRACE(fsdp::to_string(s));
    FSDPOptions o;
    o.sharding_strategy = s;
    o.shard_group_size = hybrid_group_size();
    auto wrap = [o, &check_dict](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
      auto f = fsdp::FullyShardedDataParallel::wrap(std::move(m), testing::world(), o);
      EXPECT_EQ(f->named_parameters().size(), 3u);  // emb.weight, block.weight, block.bias
      check_dict(f);
      return f;
    };
    expect_equivalent(tied_workload(), wrap, 1e-5);
  }
  auto ddp = [&](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    auto d = fsdp::DistributedDataParallel::wrap(std::move(m), testing::world(), {});
    check_dict(d);
    return d;
  };
  expect_equivalent(tied_workload(), ddp, 1e-5);
  // Clipping through the engine counts the tied gradient once: the local norm.
  manual_seed(7);
  auto local = std::make_shared<TiedLm>();
  manual_seed(7);
  auto d = fsdp::DistributedDataParallel::wrap(std::make_shared<TiedLm>(), testing::world(), {});
  const Batch b = tied_workload().batch(0);
  nn::functional::cross_entropy((*local)(b.x), b.y).backward();
  nn::functional::cross_entropy((*d)(local_slice(b.x)), local_slice(b.y)).backward();
  EXPECT_NEAR(d->engine().clip_grad_norm_(1e9), nn::utils::clip_grad_norm_(local->parameters(), 1e9), 1e-5);
}

// Only the head (one use of the tied weight) checkpointed: its part of the gradient arrives in
// the recomputation's own backward, the embedding's later; the unit reduces both.
TEST(FSDPEquivalence, ATiedWeightWithOneUseCheckpointed) {
  auto checkpoint_head = [](nn::Module& m) {
    nn::apply_activation_checkpointing(m, [](nn::Module& c) { return c.type_name() == "Linear"; });
  };
  Workload w = tied_workload();
  w.make = [checkpoint_head] {
    auto m = std::make_shared<TiedLm>();
    checkpoint_head(*m);
    return std::shared_ptr<nn::Module>(m);
  };
  for (auto s : {ShardingStrategy::FullShard, ShardingStrategy::NoShard}) {
    SCOPED_TRACE(fsdp::to_string(s));
    expect_equivalent(w, fsdp_wrapper({.sharding_strategy = s}), 1e-5);
  }
  expect_equivalent(w, [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::DistributedDataParallel::wrap(std::move(m), testing::world(), {});
  }, 1e-5);
}

// Tied slots in two units cannot be (each unit gathers and frees its own): a named Error at wrap,
// also when the unit that took it keeps the module's own tensor (NoShard).
TEST(FSDPEquivalence, ATiedWeightSplitOverTwoUnitsIsANamedError) {
  for (auto s : {ShardingStrategy::FullShard, ShardingStrategy::NoShard}) {
    FSDPOptions o;
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Embedding"});
    o.unit_strategy = [s](const nn::Module&) -> std::optional<ShardingStrategy> { return s; };
    std::string error;
    try {
      fsdp::FullyShardedDataParallel::wrap(std::make_shared<TiedLm>(), testing::world(), o);
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("parameter 'head.weight' is the same tensor as a parameter another unit took"),
              std::string::npos)
        << fsdp::to_string(s) << ": " << error;
  }
}

TEST(FSDPEquivalence, DistributedDataParallel) {
  auto ddp = [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::DistributedDataParallel::wrap(std::move(m), testing::world(), {.bucket_cap_mb = 0.05});
  };
  expect_equivalent(cnn_workload(), ddp, 1e-5);
  expect_equivalent(gpt_workload(), ddp, 1e-5);
}

// A parameter no rank's backward reached keeps no gradient, whichever unit or bucket holds it
// (it shares one with parameters that did get gradients here).
TEST(FSDPEquivalence, ParametersLeftOutOfAForwardAreNotUpdated) {
  for (auto s : kStrategies) {
    SCOPED_TRACE(fsdp::to_string(s));
    FSDPOptions o;
    o.sharding_strategy = s;
    o.shard_group_size = hybrid_group_size();
    expect_equivalent(skips_middle_workload(), fsdp_wrapper(o), 1e-5);
  }
  auto ddp = [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::DistributedDataParallel::wrap(std::move(m), testing::world(), {});
  };
  expect_equivalent(skips_middle_workload(), ddp, 1e-5);
  g_skip_middle = false;
}

// Two backwards before one step, without zero_grad between them, the second leaving b out: b
// keeps the first backward's gradient (NoShard's parameters are the module's own, so it sits on
// them between the backwards), also when the first ran under no_sync.
TEST(FSDPEquivalence, AParameterLeftOutOfALaterBackwardKeepsItsGradient) {
  const Workload w = skips_middle_workload();
  auto ddp = [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::DistributedDataParallel::wrap(std::move(m), testing::world(), {});
  };
  std::vector<std::pair<std::string, std::function<std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>)>>> wraps =
      {{"ddp", ddp}};
  for (auto s : kStrategies) {
    FSDPOptions o;
    o.sharding_strategy = s;
    o.shard_group_size = hybrid_group_size();
    wraps.emplace_back(fsdp::to_string(s), fsdp_wrapper(o));
  }
  for (const auto& [name, wrap] : wraps)
    for (bool first_under_no_sync : {false, true}) {
      SCOPED_TRACE(name + (first_under_no_sync ? ", first backward under no_sync" : ""));
      manual_seed(7);
      auto local = w.make();
      manual_seed(7);
      auto wrapped = wrap(w.make());
      std::map<std::string, Tensor> initial;
      for (auto& [n, t] : local->state_dict()) initial[n] = t.clone();
      optim::AdamW lo(local->named_parameters(), adam()), so(wrapped->named_parameters(), adam());
      auto* engine = dynamic_cast<fsdp::FullyShardedDataParallel*>(wrapped.get());
      if (!engine) engine = &dynamic_cast<fsdp::DistributedDataParallel&>(*wrapped).engine();
      for (int step = 0; step < 2; ++step) {
        lo.zero_grad();
        so.zero_grad();
        for (int k = 0; k < 2; ++k) {
          Batch b = w.batch(k);  // k = 1 leaves b out
          (w.loss((*local)(b.x), b.y) * 0.5).backward();
          std::optional<fsdp::FullyShardedDataParallel::NoSyncGuard> guard;
          if (first_under_no_sync && k == 0) guard.emplace(*engine);
          (w.loss((*wrapped)(local_slice(b.x)), local_slice(b.y)) * 0.5).backward();
        }
        lo.step();
        so.step();
      }
      std::map<std::string, Tensor> got = engine->full_state_dict();
      for (auto& [n, t] : local->state_dict()) EXPECT_TRUE(updates_close(got.at(n), t, initial.at(n), 1e-5)) << n;
    }
  g_skip_middle = false;
}

TEST(FSDPEquivalence, ManualWrapInsideEnableWrap) {
  auto make = [] {
    manual_seed(7);
    return models::small_cnn();
  };
  auto wrap_by_hand = [&](std::shared_ptr<nn::Module>) -> std::shared_ptr<nn::Module> {
    auto cnn = make();
    fsdp::enable_wrap scope(testing::world(), {});
    auto seq = std::make_shared<nn::Sequential>();
    int64_t wrapped = 0;
    for (auto& [name, child] : cnn->named_children()) {
      wrapped += child->num_parameters() > 0;
      seq->push_back(child->num_parameters() > 0 ? fsdp::wrap(child) : child);
    }
    auto root = fsdp::wrap(seq);  // the FSDP type: no cast needed
    EXPECT_EQ(root->num_units(), wrapped + 1);
    return root;
  };
  Workload w = cnn_workload();
  w.make = [&] { return std::shared_ptr<nn::Module>(make()); };
  expect_equivalent(w, wrap_by_hand, 1e-5);
  // Outside a scope wrap() has no settings to use; wrap_if_enabled is PyTorch's identity.
  auto plain = std::make_shared<nn::Linear>(2, 2);
  EXPECT_THROW(fsdp::wrap(plain), Error);
  EXPECT_EQ(fsdp::wrap_if_enabled(plain).get(), plain.get());
}

// The optimizer step streams over the offload files when the optimizer is registered (reading
// ahead nothing, one byte's worth, or the default budget), and reads everything back in backward
// when it is not: the parameters are the same either way.
TEST(FSDPEquivalence, OffloadGivesTheSameParameters) {
  for (int64_t read_ahead : {int64_t{0}, int64_t{1}, fsdp::CPUOffload().read_ahead_bytes})
    for (bool registered : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "read_ahead_bytes " << read_ahead << (registered ? "" : ", no optimizer"));
      FSDPOptions o;
      o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
      o.cpu_offload.offload_params = true;
      o.cpu_offload.read_ahead_bytes = read_ahead;
      expect_equivalent(gpt_workload(), fsdp_wrapper(o), 1e-5, 3, registered);
    }
  // Every move out waiting for its write: the same parameters, only slower.
  FSDPOptions through;
  through.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  through.cpu_offload = {.offload_params = true, .write_behind_bytes = 0};
  expect_equivalent(gpt_workload(), fsdp_wrapper(through), 1e-5, 3, true);
  FSDPOptions bad;
  bad.cpu_offload = {.offload_params = true, .read_ahead_bytes = -1};
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(gpt_workload().make(), testing::world(), bad), Error);
  bad.cpu_offload = {.offload_params = true, .write_behind_bytes = -1};
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(gpt_workload().make(), testing::world(), bad), Error);
}

// The optimizer stepping each unit during backward, as soon as its gradients are reduced, trains
// exactly like ordinary steps after backward: every strategy, nested units, and offload with
// each read-ahead budget (where each unit's state is read and written back within backward).
TEST(FSDPEquivalence, OptimizerInBackward) {
  for (const Config& c : all_configs()) {
    SCOPED_TRACE(describe(c));
    expect_equivalent(gpt_workload(), fsdp_wrapper(options_for(c, fsdp::module_type_auto_wrap_policy({"Block"}))), 1e-5,
                      3, true, /*in_backward=*/true);
  }
  for (int64_t read_ahead : {int64_t{0}, int64_t{1}, fsdp::CPUOffload().read_ahead_bytes}) {
    SCOPED_TRACE(::testing::Message() << "offload, read_ahead_bytes " << read_ahead);
    FSDPOptions o;
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
    o.cpu_offload.offload_params = true;
    o.cpu_offload.read_ahead_bytes = read_ahead;
    expect_equivalent(gpt_workload(), fsdp_wrapper(o), 1e-5, 3, true, /*in_backward=*/true);
  }
}

TEST(FSDPEquivalence, ChannelsLastStaysChannelsLast) {
  Workload w = cnn_workload(MemoryFormat::ChannelsLast);
  auto wrap = [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    auto conv = m->named_children()[0].second;
    auto sharded = fsdp::FullyShardedDataParallel::wrap(m, testing::world(), {.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(1000)});
    EXPECT_TRUE(conv->param("weight").is_contiguous(MemoryFormat::ChannelsLast)) << "the shard keeps the format";
    conv->register_forward_pre_hook([](nn::Module& c, const nn::Args&) -> std::optional<nn::Args> {
      const Tensor& wgt = c.param("weight");
      EXPECT_EQ(wgt.sizes(), IntArrayRef({32, 1, 3, 3}));
      EXPECT_TRUE(wgt.is_contiguous(MemoryFormat::ChannelsLast)) << "gathered weight strides " << wgt.strides();
      return std::nullopt;
    });
    return sharded;
  };
  MemoryFormatCheckGuard check(true);
  expect_equivalent(w, wrap, 1e-5, 2);
}

// Ranks initialized differently end up with rank 0's parameters and buffers, channels-last ones
// included (a broadcast into a contiguous copy would leave them as they were).
TEST(FSDPFeatures, SyncModuleStatesBroadcastsEveryFormatInPlace) {
  auto& pg = testing::world();
  for (auto strategy : {ShardingStrategy::FullShard, ShardingStrategy::NoShard}) {
    manual_seed(0);
    auto want = models::small_cnn();
    want->to(MemoryFormat::ChannelsLast);
    manual_seed(1000 + pg->rank());  // a different model on every rank but 0
    if (pg->rank() == 0) manual_seed(0);
    auto mine = models::small_cnn();
    mine->to(MemoryFormat::ChannelsLast);
    {
      NoGradGuard g;
      for (auto& [name, b] : mine->named_buffers())
        if (is_floating_point(b.dtype())) b.fill_(static_cast<double>(pg->rank()));
      for (auto& [name, b] : want->named_buffers())
        if (is_floating_point(b.dtype())) b.fill_(0.0);
    }
    FSDPOptions o;
    o.sharding_strategy = strategy;
    o.sync_module_states = true;
    auto m = fsdp::FullyShardedDataParallel::wrap(mine, pg, o);
    auto got = m->full_state_dict();
    for (auto& [name, t] : want->state_dict())
      EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name << " under " << fsdp::to_string(strategy);
  }
}

// The workload's model twice from one seed: a local copy and one under FSDP with a unit per
// Block (offloaded if asked).
std::pair<std::shared_ptr<nn::Module>, std::shared_ptr<fsdp::FullyShardedDataParallel>> local_and_sharded(
    const Workload& w, bool offload) {
  manual_seed(7);
  auto local = w.make();
  manual_seed(7);
  FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.cpu_offload.offload_params = offload;
  return {local, fsdp::FullyShardedDataParallel::wrap(w.make(), testing::world(), o)};
}

// Gradient accumulation under no_sync trains like one big batch, with ordinary steps and with the
// optimizer stepping in backward (in memory and offloaded): there the backwards under no_sync
// only accumulate and the one after them steps once, so the step count is one per reducing
// backward, no gradient is left, and step() in the training loop applies nothing.
TEST(FSDPFeatures, NoSyncAccumulatesLikeOneBigBatch) {
  Workload w = gpt_workload();
  for (auto [in_backward, offload] : {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
    SCOPED_TRACE(::testing::Message() << (in_backward ? "optimizer in backward" : "ordinary steps")
                                      << (offload ? ", offload" : ""));
    auto [local, sharded] = local_and_sharded(w, offload);
    optim::SGD lo(local->named_parameters(), {.lr = 0.1, .momentum = 0.9});
    optim::SGD so(sharded->named_parameters(), {.lr = 0.1, .momentum = 0.9});
    if (in_backward) sharded->register_optimizer(so, {.in_backward = true});
    EXPECT_EQ(sharded->steps_in_backward(), in_backward);
    for (int step = 0; step < 2; ++step) {
      Batch a = w.batch(2 * step), b = w.batch(2 * step + 1);
      lo.zero_grad();
      (w.loss((*local)(a.x), a.y) * 0.5).backward();
      (w.loss((*local)(b.x), b.y) * 0.5).backward();
      lo.step();
      so.zero_grad();
      {
        auto guard = sharded->no_sync();
        (w.loss((*sharded)(local_slice(a.x)), local_slice(a.y)) * 0.5).backward();
      }
      EXPECT_EQ(so.step_count(), step) << "a backward under no_sync stepped";
      (w.loss((*sharded)(local_slice(b.x)), local_slice(b.y)) * 0.5).backward();
      if (in_backward) {
        EXPECT_EQ(so.step_count(), step + 1);
        for (auto& [name, p] : sharded->named_parameters()) EXPECT_FALSE(p.grad().defined()) << name << " kept its gradient";
      }
      so.step();
      EXPECT_EQ(so.step_count(), step + 1);
    }
    auto got = sharded->full_state_dict();
    for (auto& [name, t] : local->state_dict()) EXPECT_TRUE(testing::all_close(got[name], t, 1e-5, 1e-6)) << name;
  }
}

// PyTorch's DDP broadcast_buffers: before a forward, rank 0's buffers reach every rank, so after
// training on different data every rank evaluates the same model (rank 0's running statistics);
// with it off, each rank keeps its own. The forward after a no-grad one does not broadcast.
TEST(FSDPFeatures, DistributedDataParallelBroadcastsRankZerosBuffers) {
  auto& pg = testing::world();
  const int r = pg->rank(), w = pg->size();
  for (bool broadcast : {true, false}) {
    SCOPED_TRACE(broadcast ? "broadcast_buffers" : "own buffers");
    manual_seed(3);
    auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm1d>(4)});
    auto ddp = fsdp::DistributedDataParallel::wrap(model, pg, {.broadcast_buffers = broadcast});
    for (int step = 0; step < 2; ++step) {
      Tensor x = arange(24).to(kFloat).view({8, 3}) * (0.1 * (r + 1)) + static_cast<double>(r + step);
      (*ddp)(x).sum().backward();
    }
    ddp->eval();
    Tensor probe = ones({2, 3});
    Tensor mean_here = model->state_dict().at("1.running_mean").clone();
    Tensor out;
    {
      autograd::NoGradGuard no_grad;
      out = (*ddp)(probe).contiguous();
    }
    Tensor means = empty({w * 4}), outs = empty({w * 8});
    pg->all_gather(means, model->state_dict().at("1.running_mean").contiguous());
    pg->all_gather(outs, out.view({-1}));
    for (int q = 1; q < w; ++q) {
      const bool same = testing::all_close(outs.narrow(0, q * 8, 8), outs.narrow(0, 0, 8), 0, 0) &&
                        testing::all_close(means.narrow(0, q * 4, 4), means.narrow(0, 0, 4), 0, 0);
      EXPECT_EQ(same, broadcast) << "rank " << q << " against rank 0";
    }
    if (broadcast && r != 0 && w > 1)
      EXPECT_FALSE(testing::all_close(mean_here, means.narrow(0, 0, 4), 0, 0)) << "nothing to broadcast: a vacuous test";
    pg->barrier();
  }
}

// HYBRID_SHARD sends each unit's reduced chunk across the replicas (other hosts) while backward
// goes on, not after it: by the time the first block's input gradient exists, the later blocks'
// all-reduces across replicas are launched (a unit's starts once the unit two after it in
// backward launches its own reduction), and every unit's exactly once per backward.
TEST(FSDPFeatures, HybridReducesAcrossReplicasDuringBackward) {
  if (testing::world()->size() < 2) GTEST_SKIP() << "one rank has no replicas";
  for (ShardingStrategy strategy : {ShardingStrategy::HybridShard, ShardingStrategy::HybridShardGradOp}) {
    SCOPED_TRACE(fsdp::to_string(strategy));
    models::GPTConfig c = tiny_gpt();
    c.n_layer = 4;
    auto model = std::make_shared<models::GPT>(c);
    std::shared_ptr<nn::Module> first_block;
    for (auto& [name, m] : model->named_modules())
      if (name == "h.0") first_block = m;
    ASSERT_TRUE(first_block);
    FSDPOptions o;
    o.sharding_strategy = strategy;
    o.shard_group_size = hybrid_group_size();
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
    auto sharded = fsdp::FullyShardedDataParallel::wrap(model, testing::world(), o);
    int64_t launched_in_backward = -1;
    first_block->register_forward_pre_hook([&](nn::Module&, const nn::Args& a) -> std::optional<nn::Args> {
      a[0].tensor().register_hook([&](const Tensor& g) {
        launched_in_backward = sharded->stats().replica_all_reduces;
        return g;
      });
      return std::nullopt;
    });
    Batch b = gpt_workload().batch(0);
    sharded->reset_stats();
    gpt_workload().loss((*sharded)(local_slice(b.x)), local_slice(b.y)).backward();
    EXPECT_GE(launched_in_backward, 1) << "no all-reduce across replicas started before backward ended";
    EXPECT_EQ(sharded->stats().replica_all_reduces, c.n_layer + 1) << "one per unit (4 blocks and the root)";
  }
}

// The stats of the second of two training steps (the first records the forward order, which
// prefetching follows) of a GPT with `layers` blocks, each its own unit, prefetching as given.
fsdp::FSDPStats second_step_stats(int64_t layers, bool forward_prefetch, int limit_all_gathers) {
  models::GPTConfig c = tiny_gpt();
  c.n_layer = layers;
  FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.forward_prefetch = forward_prefetch;
  o.limit_all_gathers = limit_all_gathers;
  auto sharded = fsdp::FullyShardedDataParallel::wrap(std::make_shared<models::GPT>(c), testing::world(), o);
  optim::SGD opt(sharded->named_parameters(), {.lr = 0.01});
  Workload w = gpt_workload();
  for (int64_t step = 0; step < 2; ++step) {
    Batch b = w.batch(step);
    sharded->reset_stats();
    opt.zero_grad();
    w.loss((*sharded)(local_slice(b.x)), local_slice(b.y)).backward();
    opt.step();
  }
  return sharded->stats();
}

// With limit_all_gathers 1, every unit's gather starts while the unit before it computes: a unit
// stops counting as gathered ahead once its own forward (or backward) begins, so the next one can
// be prefetched then (counted before its wait, every other unit was gathered on demand), and the
// root's backward, which comes first, prefetches the last unit of forward. In a step after the
// first (which records the order), only the root's gather at the start of forward is on demand.
TEST(FSDPFeatures, EveryGatherButTheFirstIsPrefetched) {
  if (testing::world()->size() < 2) GTEST_SKIP() << "one rank gathers nothing";
  constexpr int64_t kLayers = 4;
  for (bool forward_prefetch : {true, false}) {
    SCOPED_TRACE(forward_prefetch ? "forward and backward prefetch" : "backward prefetch");
    const fsdp::FSDPStats s = second_step_stats(kLayers, forward_prefetch, 1);
    // Forward gathers the root and 4 blocks; backward regathers the blocks (the root kept its own).
    EXPECT_EQ(s.all_gathers, 2 * kLayers + 1);
    EXPECT_EQ(s.prefetched_gathers, forward_prefetch ? s.all_gathers - 1 : kLayers)
        << "gathers started ahead of use, of " << s.all_gathers;
    EXPECT_EQ(s.most_prefetched, 1);
  }
}

// limit_all_gathers N keeps N units gathered ahead of use, not one (a unit already on its way
// does not stop the prefetch of the one after it), and no more.
TEST(FSDPFeatures, LimitAllGathersBoundsTheUnitsGatheredAhead) {
  if (testing::world()->size() < 2) GTEST_SKIP() << "one rank gathers nothing";
  for (int limit : {1, 2, 3}) {
    SCOPED_TRACE("limit_all_gathers " + std::to_string(limit));
    const fsdp::FSDPStats s = second_step_stats(5, /*forward_prefetch=*/true, limit);
    EXPECT_EQ(s.most_prefetched, limit);
    EXPECT_EQ(s.prefetched_gathers, s.all_gathers - 1);
  }
  FSDPOptions bad;
  bad.limit_all_gathers = -1;
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(gpt_workload().make(), testing::world(), bad), Error);
}

// Gradients accumulate where the unit reduces them from (each parameter's .grad() is a view into
// the unit's gradient buffer), across no_sync micro-batches and across backwards without
// zero_grad, under every strategy and DDP: training matches one process on the big batch, and a
// gradient taken from a parameter after a step does not change under its holder.
TEST(FSDPFeatures, GradientsAccumulateInTheBufferUnderEveryStrategy) {
  Workload w = gpt_workload();
  std::vector<std::pair<std::string, std::function<std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>)>>> wraps;
  for (auto strategy : kStrategies) {
    FSDPOptions o;
    o.sharding_strategy = strategy;
    o.shard_group_size = hybrid_group_size();
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
    wraps.emplace_back(fsdp::to_string(strategy), fsdp_wrapper(o));
  }
  wraps.emplace_back("ddp", [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
    return fsdp::DistributedDataParallel::wrap(std::move(m), testing::world(), {.bucket_cap_mb = 0.01});
  });
  for (auto& [name, wrap] : wraps) {
    SCOPED_TRACE(name);
    manual_seed(7);
    auto local = w.make();
    manual_seed(7);
    auto sharded = wrap(w.make());
    auto* engine = dynamic_cast<fsdp::FullyShardedDataParallel*>(sharded.get());
    auto* ddp = dynamic_cast<fsdp::DistributedDataParallel*>(sharded.get());
    if (ddp) engine = &ddp->engine();
    ASSERT_NE(engine, nullptr);
    optim::SGD lo(local->named_parameters(), {.lr = 0.1, .momentum = 0.9});
    optim::SGD so(sharded->named_parameters(), {.lr = 0.1, .momentum = 0.9});
    Tensor held, held_copy;
    for (int step = 0; step < 2; ++step) {
      // Three micro-batches: two under no_sync, then one without zero_grad in between.
      lo.zero_grad();
      so.zero_grad();
      for (int k = 0; k < 3; ++k) {
        Batch b = w.batch(3 * step + k);
        (w.loss((*local)(b.x), b.y) * (1.0 / 3)).backward();
        std::optional<fsdp::FullyShardedDataParallel::NoSyncGuard> guard;
        if (k == 0) guard.emplace(*engine);
        (w.loss((*sharded)(local_slice(b.x)), local_slice(b.y)) * (1.0 / 3)).backward();
      }
      lo.step();
      so.step();
      if (step == 0) {
        held = sharded->named_parameters().front().second.grad();
        ASSERT_TRUE(held.defined());
        held_copy = held.clone();
      }
    }
    EXPECT_TRUE(testing::all_close(held, held_copy, 0, 0)) << "a kept gradient changed under its holder";
    auto got = engine->full_state_dict();
    for (auto& [pname, t] : local->state_dict())
      EXPECT_TRUE(testing::all_close(got.at(pname), t, 1e-5, 1e-6)) << pname;
  }
}

// Offload reuses one tier buffer per unit for the shards' gradients: two backward passes
// without zero_grad must still add up, and a gradient someone kept must not change later.
TEST(FSDPFeatures, OffloadAccumulatesAndKeepsHeldGradients) {
  Workload w = gpt_workload();
  auto [local, sharded] = local_and_sharded(w, /*offload=*/true);
  optim::SGD lo(local->named_parameters(), {.lr = 0.1});
  optim::SGD so(sharded->named_parameters(), {.lr = 0.1});
  Tensor held, held_copy;
  for (int step = 0; step < 3; ++step) {
    Batch a = w.batch(2 * step), b = w.batch(2 * step + 1);
    lo.zero_grad();
    w.loss((*local)(a.x), a.y).backward();
    w.loss((*local)(b.x), b.y).backward();
    lo.step();
    so.zero_grad();
    w.loss((*sharded)(local_slice(a.x)), local_slice(a.y)).backward();
    w.loss((*sharded)(local_slice(b.x)), local_slice(b.y)).backward();
    so.step();
    if (step == 0) {
      held = sharded->named_parameters().back().second.grad();
      ASSERT_TRUE(held.defined());
      held_copy = held.clone();
    }
  }
  EXPECT_TRUE(testing::all_close(held, held_copy, 0, 0)) << "a kept gradient changed under its holder";
  auto got = sharded->full_state_dict();
  for (auto& [name, t] : local->state_dict()) EXPECT_TRUE(testing::all_close(got[name], t, 1e-5, 1e-6)) << name;
}

TEST(FSDPFeatures, ClipGradNormMatchesLocal) {
  auto& pg = testing::world();
  Workload w = cnn_workload();
  manual_seed(7);
  auto local = w.make();
  manual_seed(7);
  auto sharded = fsdp::FullyShardedDataParallel::wrap(w.make(), pg, {.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(1000)});
  Batch b = w.batch(0);
  w.loss((*local)(b.x), b.y).backward();
  w.loss((*sharded)(local_slice(b.x)), local_slice(b.y)).backward();
  const double want = nn::utils::clip_grad_norm_(local->parameters(), 0.5);
  const double got = sharded->clip_grad_norm_(0.5);
  EXPECT_NEAR(got, want, 1e-5 * want);
  // Clipped shard gradients equal the clipped local gradients' rows.
  optim::SGD lo(local->named_parameters(), {.lr = 1.0});
  optim::SGD so(sharded->named_parameters(), {.lr = 1.0});
  lo.step();
  so.step();
  auto got_state = sharded->full_state_dict();
  for (auto& [name, t] : local->state_dict()) EXPECT_TRUE(testing::all_close(got_state[name], t, 1e-5, 1e-6)) << name;
}

// Every strategy computes in bfloat16, including NO_SHARD, whose units keep the module's own
// tensors (it computes with casts of them).
TEST(FSDPFeatures, MixedPrecisionTrainsCloseToFloat32) {
  for (ShardingStrategy strategy : {ShardingStrategy::FullShard, ShardingStrategy::ShardGradOp, ShardingStrategy::NoShard}) {
  SCOPED_TRACE(fsdp::to_string(strategy));
  FSDPOptions o;
  o.sharding_strategy = strategy;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat};
  auto& pg = testing::world();
  Workload w = gpt_workload();
  manual_seed(7);
  auto sharded = fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o);
  for (auto& [name, p] : sharded->named_parameters()) EXPECT_EQ(p.dtype(), kFloat) << "master " << name;
  optim::AdamW opt(sharded->named_parameters(), adam());
  manual_seed(7);
  auto local = w.make();
  optim::AdamW lo(local->named_parameters(), adam());
  for (int step = 0; step < 3; ++step) {
    Batch b = w.batch(step);
    Tensor out = (*sharded)(local_slice(b.x));
    EXPECT_EQ(out.dtype(), kBFloat16);
    Tensor loss = w.loss(out.to(kFloat), local_slice(b.y));
    opt.zero_grad();
    loss.backward();
    opt.step();
    Tensor ll = w.loss((*local)(b.x), b.y);
    lo.zero_grad();
    ll.backward();
    lo.step();
    Tensor global = loss.detach().reshape({1}).to(kDouble).clone();
    pg->all_reduce(global, dist::ReduceOp::Avg);
    EXPECT_NEAR(global.item<double>(), ll.item<double>(), 0.02 * ll.item<double>());
  }
  for (auto& [name, p] : sharded->named_parameters()) EXPECT_EQ(p.dtype(), kFloat) << "after training: " << name;
  }
}

// Per-rank peak bytes of a training step against fsdp::memory_formula, and bytes sent against
// fsdp::bytes_sent_per_step, for every strategy: 48 units of 16512 parameters, AdamW (two
// moments), inputs of one row so activations are negligible.
// Every strategy in normal mode and in deterministic mode with one and two micro-batches per rank.
TEST(FSDPMemory, PeakAndTrafficMatchTheFormula) {
  auto& pg = testing::world();
  for (int micro_per_rank : {0, 1, 2})
  for (auto strategy : kStrategies) {
    SCOPED_TRACE(fsdp::to_string(strategy) + (micro_per_rank ? " deterministic, micro-batches per rank " +
                                                                    std::to_string(micro_per_rank) : ""));
    const int64_t baseline = memory_stats().current_bytes;
    int64_t peak = 0, sent = 0;
    fsdp::MemoryFormula formula;
    int64_t expected_sent = 0, early = 0;
    {
      auto seq = std::make_shared<nn::Sequential>();
      for (int i = 0; i < 48; ++i) seq->push_back(std::make_shared<nn::Linear>(128, 128));
      FSDPOptions o;
      o.sharding_strategy = strategy;
      o.shard_group_size = hybrid_group_size();
      o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Linear"});
      o.deterministic = micro_per_rank > 0;
      o.micro_batches = micro_per_rank * pg->size();
      auto sharded = fsdp::FullyShardedDataParallel::wrap(seq, pg, o);
      optim::AdamW opt(sharded->named_parameters(), adam());
      sharded->register_optimizer(opt);
      Tensor x = randn({1, 128});
      auto step = [&] {  // last step's gradients live through the first forward (the formula's peak)
        for (int k = 0; k < std::max(micro_per_rank, 1); ++k) {
          Tensor loss = (*sharded)(x).sum();
          if (k == 0) opt.zero_grad();
          loss.backward();
        }
        opt.step();
      };
      step();  // creates the optimizer state
      step();
      sharded->wait_for_pending_gathers();  // the previous step's, so they count there
      const int64_t sent_before = sharded->bytes_sent();
      reset_peak_memory();
      step();
      sharded->wait_for_pending_gathers();
      peak = memory_stats().peak_bytes - baseline;
      sent = sharded->bytes_sent() - sent_before;
      formula = fsdp::memory_formula(*sharded, 2);
      expected_sent = fsdp::bytes_sent_per_step(*sharded);
      // The formula holds two reductions in flight (the bound); ones that finish early hold
      // fewer buffers: the largest unit's gradients on the wire (deterministic mode: and what
      // arrived from the other ranks, as much again).
      early = 2 * sharded->largest_unit_bytes() * (micro_per_rank ? 2 : 1);
    }
    const double expected = static_cast<double>(formula.total());
    std::ostringstream terms;
    terms << " (parameters " << formula.parameters << ", gradients " << formula.gradients << ", optimizer "
          << formula.optimizer_state << ", working " << formula.working << ")";
    EXPECT_LE(peak, 1.05 * expected) << "peak " << peak << " formula " << expected << terms.str();
    EXPECT_GE(peak, 0.95 * (expected - static_cast<double>(early)))
        << "peak " << peak << " formula " << expected << terms.str();
    EXPECT_EQ(sent, expected_sent);
  }
}

// The two settings that shrink a FullShard rank's state: bfloat16 moments (half the optimizer
// state) and the optimizer in backward (no gradients kept); measured peak against the formula.
TEST(FSDPMemory, Bfloat16StateAndOptimizerInBackwardMatchTheFormula) {
  auto& pg = testing::world();
  for (bool bf16 : {false, true})
    for (bool in_backward : {false, true}) {
      SCOPED_TRACE(std::string(bf16 ? "bfloat16 state" : "float32 state") + (in_backward ? ", in backward" : ""));
      const int64_t baseline = memory_stats().current_bytes;
      int64_t peak = 0, early = 0;
      fsdp::MemoryFormula formula;
      {
        auto seq = std::make_shared<nn::Sequential>();
        for (int i = 0; i < 48; ++i) seq->push_back(std::make_shared<nn::Linear>(128, 128));
        FSDPOptions o;
        o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Linear"});
        auto sharded = fsdp::FullyShardedDataParallel::wrap(seq, pg, o);
        optim::AdamWOptions a = adam();
        if (bf16) a.state_dtype = kBFloat16;
        optim::AdamW opt(sharded->named_parameters(), a);
        sharded->register_optimizer(opt, {.in_backward = in_backward});
        Tensor x = randn({1, 128});
        auto step = [&] {
          Tensor loss = (*sharded)(x).sum();
          opt.zero_grad();
          loss.backward();
          if (!in_backward) opt.step();
        };
        step();  // creates the optimizer state
        step();
        sharded->wait_for_pending_gathers();
        reset_peak_memory();
        step();
        sharded->wait_for_pending_gathers();
        peak = memory_stats().peak_bytes - baseline;
        const fsdp::OptimizerFootprint footprint = fsdp::optimizer_footprint(opt, in_backward);
        EXPECT_EQ(footprint.state_bytes, bf16 ? 2 : 0);  // 0: the parameters' own
        formula = fsdp::memory_formula(*sharded, footprint);
        const int64_t shard_bytes = formula.parameters;  // float32 shards
        EXPECT_EQ(formula.optimizer_state, shard_bytes * (bf16 ? 1 : 2));
        EXPECT_EQ(formula.gradients, in_backward ? 0 : shard_bytes);
        early = 2 * sharded->largest_unit_bytes();
      }
      const double expected = static_cast<double>(formula.total());
      EXPECT_LE(peak, 1.05 * expected) << "peak " << peak << " formula " << expected;
      EXPECT_GE(peak, 0.95 * (expected - static_cast<double>(early))) << "peak " << peak << " formula " << expected;
    }
}

// Offloaded: the memory the tier holds at its peak within fsdp::memory_formula's offload term
// (units in use, read ahead and waiting for their step, writes behind, spare pages), with the
// optimizer in backward and with a step streamed after backward. A read-ahead budget of one and
// a half units' shard and state (what is already on its way counts against it: a budget of
// whole units would hide a unit read too far), in a directory of this test's own (budgets are
// per directory, the largest asked for wins).
TEST(FSDPMemory, OffloadHoldsWithinTheFormula) {
  auto& pg = testing::world();
  std::string dir = "/tmp/strider-offload-formula-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  for (bool in_backward : {true, false}) {
    SCOPED_TRACE(in_backward ? "optimizer in backward" : "streamed step");
    auto seq = std::make_shared<nn::Sequential>();
    for (int i = 0; i < 12; ++i) seq->push_back(std::make_shared<nn::Linear>(512, 512));
    FSDPOptions o;
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Linear"});
    const int64_t unit = (512 * 512 + 512) * 4 / pg->size();  // about one unit's float32 shard
    o.cpu_offload = {.offload_params = true, .directory = dir, .read_ahead_bytes = 3 * unit,
                     .write_behind_bytes = 2 * unit};
    auto sharded = fsdp::FullyShardedDataParallel::wrap(seq, pg, o);
    optim::AdamWOptions a = adam();
    a.state_dtype = kBFloat16;
    optim::AdamW opt(sharded->named_parameters(), a);
    sharded->register_optimizer(opt, {.in_backward = in_backward});
    Tensor x = randn({1, 512});
    auto step = [&] {
      Tensor loss = (*sharded)(x).sum();
      opt.zero_grad();
      loss.backward();
      if (!in_backward) opt.step();
    };
    step();
    step();
    sharded->wait_for_pending_gathers();
    sharded->reset_stats();
    step();
    step();
    sharded->wait_for_pending_gathers();
    const fsdp::MemoryFormula f = fsdp::memory_formula(*sharded, fsdp::optimizer_footprint(opt, in_backward));
    EXPECT_EQ(f.parameters + f.optimizer_state, 0) << "every unit's shard and state is in the file";
    int64_t shards = 0;
    for (const fsdp::UnitLayout& u : sharded->unit_layouts()) shards += u.layout.shard_numel() * 4;
    EXPECT_EQ(f.offloaded, 2 * shards);  // float32 shards and two bfloat16 moments
    const int64_t held = sharded->stats().offload_peak_held_bytes;
    // The formula counts one unit's pages in transit (written out, then spare); a disk behind
    // the reads can hold both bounds' worth (what a loaded machine may do to this test). Blocks
    // are whole pages (a unit's shard and moments: up to 3 pages over); an eviction counts its
    // block before it waits for the writer (one block over the bound).
    const int64_t worst_transit = o.cpu_offload.write_behind_bytes + o.cpu_offload.read_ahead_bytes - 2 * unit;
    const double bound = 1.02 * static_cast<double>(f.offload_resident + worst_transit) + unit + 3 * 4096;
    EXPECT_LE(held, bound) << "held " << held << ", formula " << f.offload_resident;
    // What is certainly there at once: the stepping unit's shard and state and the next unit's
    // shard, whose gather was issued before the reduction the step waited for (optimizer in
    // backward); every shard (a step streamed after backward starts with all of them).
    EXPECT_GE(held, in_backward ? 3 * unit : 12 * unit) << "held " << held << ", formula " << f.offload_resident;
  }
  rmdir(dir.c_str());
}

TEST(FSDPErrors, BadInputIsAClearError) {
  auto& pg = testing::world();
  auto lin = std::make_shared<nn::Linear>(4, 4);
  auto sharded = fsdp::FullyShardedDataParallel::wrap(lin, pg);
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(sharded, pg), Error);
  EXPECT_THROW(sharded->load_full_state_dict({{"weight", zeros({3, 4})}, {"bias", zeros({4})}}), Error);
  fsdp::enable_wrap scope(pg, {});
  EXPECT_THROW(fsdp::enable_wrap(pg, {}), Error);
}

// Stepping in backward leaves no gradients: clipping them, driving a second optimizer the same
// way, an optimizer over another model's parameters and a gradient set by hand are errors.
TEST(FSDPErrors, OptimizerInBackwardMisuse) {
  auto& pg = testing::world();
  auto sharded = fsdp::FullyShardedDataParallel::wrap(std::make_shared<nn::Linear>(4, 4), pg);
  optim::SGD opt(sharded->named_parameters(), {.lr = 0.1});
  sharded->register_optimizer(opt, {.in_backward = true});
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  (*sharded)(ones({2, 4})).sum().backward();
  expect_error([&] { sharded->clip_grad_norm_(1.0); }, "in_backward");
  optim::SGD second(sharded->named_parameters(), {.lr = 0.1});
  expect_error([&] { sharded->register_optimizer(second, {.in_backward = true}); }, "already steps in backward");
  auto other = std::make_shared<nn::Linear>(4, 4);
  optim::SGD foreign(other->named_parameters(), {.lr = 0.1});
  auto fresh = fsdp::FullyShardedDataParallel::wrap(std::make_shared<nn::Linear>(4, 4), pg);
  expect_error([&] { fresh->register_optimizer(foreign, {.in_backward = true}); }, "belongs to no unit");
  Tensor first = sharded->named_parameters().front().second;
  first.set_grad(ones_like(first));
  expect_error([&] { opt.step(); }, "holds a gradient");
  // Once the model is gone, step() applies the updates itself again.
  sharded.reset();
  const int64_t before = opt.step_count();
  opt.step();
  EXPECT_EQ(opt.step_count(), before + 1);
}

}  // namespace
}  // namespace strider
