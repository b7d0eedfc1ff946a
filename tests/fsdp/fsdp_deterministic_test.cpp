// Deterministic mode: training on N ranks gives bitwise the parameters, optimizer state,
// gradient norms and losses of training alone (world size 1, the same 12 micro-batches), for
// every strategy, mixed per-unit trees, DDP, channels-last and bfloat16 compute; and misuse
// (an incomplete step, no_sync, a micro-batch count the world does not divide) is an Error.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cstring>

#include "support/mpi_world.h"

namespace strider {
namespace {

using fsdp::FSDPOptions;
using fsdp::ShardingStrategy;

constexpr int kMicroBatches = 12;  // 1, 2, 3, 4 and 6 ranks divide it
constexpr int kGlobalBatch = 24;   // 2 samples per micro-batch

struct Workload {
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<std::pair<Tensor, Tensor>(int step)> batch;  // the global batch (same on every rank)
  std::function<Tensor(const Tensor& out, const Tensor& y)> loss;
};

Workload cnn(MemoryFormat fmt) {
  return {[fmt] {
            auto m = models::small_cnn();
            m->to(fmt);
            return std::shared_ptr<nn::Module>(m);
          },
          [fmt](int step) {
            Generator g(100 + step);
            Tensor x = randn({kGlobalBatch, 1, 28, 28}, {}, &g).contiguous(fmt);
            Tensor y = (rand({kGlobalBatch}, {}, &g) * 10.0).to(kLong);
            return std::pair{x, y};
          },
          [](const Tensor& out, const Tensor& y) { return nn::functional::cross_entropy(out, y); }};
}

Workload gpt() {
  // 40 rows of embeddings: uneven shards on 3 ranks.
  const models::GPTConfig c{.vocab_size = 40, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 16};
  return {[c] { return std::shared_ptr<nn::Module>(std::make_shared<models::GPT>(c)); },
          [](int step) {
            Generator g(200 + step);
            Tensor tokens = (rand({kGlobalBatch, 9}, {}, &g) * 40.0).to(kLong);
            return std::pair{tokens.narrow(1, 0, 8).contiguous(), tokens.narrow(1, 1, 8).contiguous()};
          },
          [](const Tensor& out, const Tensor& y) {
            return nn::functional::cross_entropy(out.reshape({-1, out.size(2)}), y.reshape({-1}));
          }};
}

// Micro-batch j of m: rows j, j + m, ... of the global batch (what interleaved data sharding gives).
Tensor micro_batch(const Tensor& t, int j, int m = kMicroBatches) {
  return t.slice(0, j, std::nullopt, m).contiguous(t.suggest_memory_format());
}

struct Result {
  std::map<std::string, Tensor> params;
  std::map<std::string, std::map<std::string, Tensor>> optimizer;
  std::vector<double> losses, norms;
};

// Four steps of AdamW with gradient clipping; this rank runs micro-batches r, r + W, ...
Result train(const Workload& w, std::shared_ptr<dist::ProcessGroup> pg, FSDPOptions o, bool ddp = false,
             int micro_batches = kMicroBatches, std::optional<ScalarType> state_dtype = std::nullopt) {
  o.deterministic = true;
  o.micro_batches = micro_batches;
  manual_seed(7);
  fsdp::FullyShardedDataParallel* model = nullptr;
  std::shared_ptr<nn::Module> front;
  if (ddp) {
    auto d = fsdp::DistributedDataParallel::wrap(w.make(), pg,
                                                 {.bucket_cap_mb = 0.05, .deterministic = true, .micro_batches = micro_batches});
    model = &d->engine();
    front = d;
  } else {
    auto f = fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o);
    model = f.get();
    front = f;
  }
  optim::AdamW opt(front->named_parameters(), {.lr = 1e-3, .weight_decay = 0.01, .state_dtype = state_dtype});
  model->register_optimizer(opt);
  Result r;
  const int world = pg->size(), rank = pg->rank();
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = w.batch(step);
    opt.zero_grad();
    dist::ExactSum loss;
    for (int j = rank; j < micro_batches; j += world) {
      Tensor l = w.loss((*front)(micro_batch(x, j, micro_batches)), micro_batch(y, j, micro_batches));
      l.backward();
      loss.add(l.item<double>());
    }
    dist::all_reduce_exact(*pg, loss);
    r.losses.push_back(loss.value() / micro_batches);
    r.norms.push_back(model->clip_grad_norm_(0.5));
    opt.step();
  }
  r.params = model->full_state_dict();
  for (auto& [name, b] : model->named_buffers()) r.params.erase(name);  // buffers follow each rank's micro-batches
  r.optimizer = model->full_optimizer_state_dict(opt);
  return r;
}

::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << "shape " << a.sizes() << " vs " << b.sizes();
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const auto bytes = static_cast<size_t>(ca.numel()) * element_size(ca.dtype());
  if (std::memcmp(ca.data(), cb.data(), bytes) != 0) {
    const double diff = strider::max((ca.to(kDouble) - cb.to(kDouble)).abs()).item<double>();
    return ::testing::AssertionFailure() << "bits differ (largest difference " << diff << ")";
  }
  return ::testing::AssertionSuccess();
}

void expect_same_bits(const Result& got, const Result& want) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got.losses[i], &want.losses[i], sizeof(double)), 0)
        << "loss of step " << i << ": " << got.losses[i] << " vs " << want.losses[i];
    EXPECT_EQ(std::memcmp(&got.norms[i], &want.norms[i], sizeof(double)), 0)
        << "gradient norm of step " << i << ": " << got.norms[i] << " vs " << want.norms[i];
  }
  ASSERT_EQ(got.params.size(), want.params.size());
  for (auto& [name, t] : want.params) {
    ASSERT_TRUE(got.params.count(name)) << name;
    EXPECT_TRUE(bitwise_equal(got.params.at(name), t)) << name;
  }
  ASSERT_EQ(got.optimizer.size(), want.optimizer.size());
  for (auto& [name, keys] : want.optimizer)
    for (auto& [key, t] : keys) {
      ASSERT_TRUE(got.optimizer.count(name) && got.optimizer.at(name).count(key)) << name << " " << key;
      EXPECT_TRUE(bitwise_equal(got.optimizer.at(name).at(key), t)) << name << " " << key;
    }
}

int hybrid_group_size() {
  const int n = testing::world()->size();
  return n % 2 == 0 ? std::max(1, n / 2) : 1;
}

FSDPOptions options(ShardingStrategy s, fsdp::AutoWrapPolicy policy, bool prefetch) {
  FSDPOptions o;
  o.sharding_strategy = s;
  o.shard_group_size = hybrid_group_size();
  o.auto_wrap_policy = std::move(policy);
  o.backward_prefetch = prefetch ? fsdp::BackwardPrefetch::BackwardPre : fsdp::BackwardPrefetch::None;
  o.forward_prefetch = prefetch;
  return o;
}

constexpr ShardingStrategy kStrategies[] = {ShardingStrategy::FullShard,      ShardingStrategy::ShardGradOp,
                                            ShardingStrategy::NoShard,        ShardingStrategy::ShardOptimizer,
                                            ShardingStrategy::HybridShard,    ShardingStrategy::HybridShardGradOp};

std::shared_ptr<dist::ProcessGroup> alone() { return std::make_shared<dist::SingleProcessGroup>(); }

TEST(FSDPDeterministic, GptEveryStrategyMatchesOneProcessBitwise) {
  const Workload w = gpt();
  const auto blocks = fsdp::module_type_auto_wrap_policy({"Block"});
  const Result want = train(w, alone(), options(ShardingStrategy::FullShard, blocks, false));
  for (ShardingStrategy s : kStrategies)
    for (bool nested : {false, true}) {
      SCOPED_TRACE(fsdp::to_string(s) + (nested ? " nested, prefetch" : ""));
      expect_same_bits(train(w, testing::world(), options(s, nested ? blocks : nullptr, nested)), want);
    }
}

TEST(FSDPDeterministic, CnnChannelsLastMatchesOneProcessBitwise) {
  for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    const Workload w = cnn(fmt);
    const auto policy = fsdp::size_based_auto_wrap_policy(1000);
    const Result want = train(w, alone(), options(ShardingStrategy::NoShard, nullptr, false));
    for (ShardingStrategy s : {ShardingStrategy::FullShard, ShardingStrategy::ShardOptimizer, ShardingStrategy::HybridShard}) {
      SCOPED_TRACE(fsdp::to_string(s));
      expect_same_bits(train(w, testing::world(), options(s, policy, true)), want);
    }
    SCOPED_TRACE("DistributedDataParallel");
    expect_same_bits(train(w, testing::world(), {}, /*ddp=*/true), want);
  }
}

TEST(FSDPDeterministic, MixedTreeAndBfloat16ComputeMatchOneProcessBitwise) {
  const Workload w = gpt();
  FSDPOptions mixed = options(ShardingStrategy::NoShard, fsdp::module_type_auto_wrap_policy({"Block"}), true);
  mixed.unit_strategy = [](const nn::Module& m) -> std::optional<ShardingStrategy> {
    if (m.type_name() == "Block") return ShardingStrategy::HybridShard;
    return std::nullopt;
  };
  FSDPOptions mixed_alone = mixed;
  mixed_alone.shard_group_size = 1;
  expect_same_bits(train(w, testing::world(), mixed), train(w, alone(), mixed_alone));

  FSDPOptions bf16 = options(ShardingStrategy::FullShard, fsdp::module_type_auto_wrap_policy({"Block"}), false);
  bf16.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat, .buffer_dtype = {}};
  expect_same_bits(train(w, testing::world(), bf16), train(w, alone(), bf16));
}

// One micro-batch per rank (M = W): ranks turn exact sums straight into float means, the
// single process keeps limbs across its W micro-batches; the bits must still agree.
TEST(FSDPDeterministic, OneMicroBatchPerRankMatchesOneProcessBitwise) {
  const Workload w = gpt();
  const int m = testing::world()->size();
  const auto blocks = fsdp::module_type_auto_wrap_policy({"Block"});
  const Result want = train(w, alone(), options(ShardingStrategy::FullShard, blocks, false), false, m);
  for (ShardingStrategy s : {ShardingStrategy::FullShard, ShardingStrategy::NoShard, ShardingStrategy::HybridShard}) {
    SCOPED_TRACE(fsdp::to_string(s));
    expect_same_bits(train(w, testing::world(), options(s, blocks, true), false, m), want);
  }
  SCOPED_TRACE("DistributedDataParallel");
  expect_same_bits(train(w, testing::world(), {}, /*ddp=*/true, m), want);
}

// bfloat16 optimizer state rounds stochastically, keyed by each element's place in its whole
// parameter (FSDP tells the optimizer where each shard starts): the same bits at every world
// size and strategy.
TEST(FSDPDeterministic, Bfloat16OptimizerStateMatchesOneProcessBitwise) {
  const Workload w = gpt();
  const auto blocks = fsdp::module_type_auto_wrap_policy({"Block"});
  const Result want = train(w, alone(), options(ShardingStrategy::FullShard, blocks, false), false, kMicroBatches, kBFloat16);
  ASSERT_EQ(want.optimizer.begin()->second.at("exp_avg").dtype(), kBFloat16);
  for (ShardingStrategy s : {ShardingStrategy::FullShard, ShardingStrategy::ShardOptimizer, ShardingStrategy::HybridShard}) {
    SCOPED_TRACE(fsdp::to_string(s));
    expect_same_bits(train(w, testing::world(), options(s, blocks, true), false, kMicroBatches, kBFloat16), want);
  }
  SCOPED_TRACE("DistributedDataParallel");
  expect_same_bits(train(w, testing::world(), {}, /*ddp=*/true, kMicroBatches, kBFloat16), want);
}

TEST(FSDPDeterministic, MisuseIsAnError) {
  const Workload w = gpt();
  auto& pg = testing::world();
  FSDPOptions o;
  o.deterministic = true;
  if (pg->size() > 1) {
    o.micro_batches = pg->size() * 2 + 1;  // not a multiple of the world size
    EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o), Error);
  }
  o.micro_batches = 0;
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o), Error);
  FSDPOptions plain;
  plain.micro_batches = 4;
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(w.make(), pg, plain), Error);
  o.micro_batches = 2 * pg->size();
  set_kernel_autotune(true);  // picks kernels by timing: results could differ between runs
  EXPECT_THROW(fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o), Error);
  set_kernel_autotune(false);

  o.micro_batches = 2 * pg->size();  // two backwards per rank per step
  auto model = fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o);
  optim::AdamW opt(model->named_parameters(), {});
  model->register_optimizer(opt);
  EXPECT_THROW(model->no_sync(), Error);
  auto [x, y] = w.batch(0);
  w.loss((*model)(micro_batch(x, pg->rank())), micro_batch(y, pg->rank())).backward();
  const auto before = model->full_state_dict();
  EXPECT_THROW(opt.step(), Error);  // one of two micro-batches: nothing may change
  for (auto& [name, t] : model->full_state_dict()) EXPECT_TRUE(bitwise_equal(t, before.at(name))) << name;
  w.loss((*model)(micro_batch(x, pg->rank() + pg->size())), micro_batch(y, pg->rank() + pg->size())).backward();
  EXPECT_NO_THROW(opt.step());

  // The same through DistributedDataParallel with an optimizer nobody registered: a step after one
  // of two micro-batches is named (it applied nothing and paired micro-batches across steps ever
  // after); the completed step goes through.
  auto ddp = fsdp::DistributedDataParallel::wrap(w.make(), pg, {.deterministic = true, .micro_batches = 2 * pg->size()});
  optim::SGD sgd(ddp->named_parameters(), {.lr = 0.1});
  for (int step = 0; step < 2; ++step) {
    sgd.zero_grad();
    w.loss((*ddp)(micro_batch(x, pg->rank())), micro_batch(y, pg->rank())).backward();
    EXPECT_THROW(sgd.step(), Error);
    w.loss((*ddp)(micro_batch(x, pg->rank() + pg->size())), micro_batch(y, pg->rank() + pg->size())).backward();
    EXPECT_NO_THROW(sgd.step());
  }
}

// A non-finite gradient cannot be summed exactly: the shard it lands in gets NaN gradients and
// the norm is NaN on every rank (as float sums would give), not garbage. Here one rank's whole
// loss is infinite, so every shard is hit.
TEST(FSDPDeterministic, NonFiniteGradientsBecomeNaNEverywhere) {
  auto& pg = testing::world();
  const Workload w = gpt();
  FSDPOptions o;
  o.deterministic = true;
  o.micro_batches = pg->size();
  auto model = fsdp::FullyShardedDataParallel::wrap(w.make(), pg, o);
  auto [x, y] = w.batch(0);
  Tensor l = w.loss((*model)(micro_batch(x, pg->rank())), micro_batch(y, pg->rank()));
  if (pg->rank() == pg->size() - 1) l = l * std::numeric_limits<double>::infinity();
  l.backward();
  EXPECT_TRUE(std::isnan(model->clip_grad_norm_(1.0)));
  for (auto& [name, p] : model->named_parameters())
    if (p.grad().defined() && p.grad().numel() > 0) EXPECT_TRUE(std::isnan(p.grad().to(kDouble).sum().item<double>())) << name;
}

}  // namespace
}  // namespace strider
