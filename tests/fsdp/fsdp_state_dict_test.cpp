// FSDP's state-dict types against a model that was never sharded: full (rank0_only too),
// sharded (rows that reassemble into the full tensors; loads into another layout when it holds
// the rows), local (the padded shards; same rank and world only); all-or-nothing loading and
// the errors for a dict of the wrong kind.
#include <gtest/gtest.h>
#include <limits>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

using fsdp::StateDictType;

models::GPTConfig tiny() { return {.vocab_size = 16, .block_size = 4, .n_layer = 2, .n_head = 2, .n_embd = 8}; }

std::shared_ptr<fsdp::FullyShardedDataParallel> sharded(fsdp::ShardingStrategy s = fsdp::ShardingStrategy::FullShard) {
  manual_seed(5);
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.sharding_strategy = s;
  return fsdp::FullyShardedDataParallel::wrap(std::make_shared<models::GPT>(tiny()), testing::world(), o);
}

std::map<std::string, Tensor> reference() {
  manual_seed(5);
  return models::GPT(tiny()).state_dict();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void scramble(fsdp::FullyShardedDataParallel& m) {
  NoGradGuard g;
  for (auto& [name, p] : m.named_parameters()) p.fill_(0.5);
}

TEST(FSDPStateDict, FullByDefaultAndRank0Only) {
  auto m = sharded();
  const auto want = reference();
  auto got = m->state_dict();
  ASSERT_EQ(got.size(), want.size());
  for (auto& [name, t] : want) EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
  EXPECT_EQ(nn::state_dict_origin(got).kind, nn::StateDictKind::Full);
  {
    fsdp::FullyShardedDataParallel::StateDictTypeGuard g(*m, {.type = StateDictType::Full, .rank0_only = true});
    auto only = m->state_dict();
    EXPECT_EQ(only.size(), testing::world()->rank() == 0 ? want.size() : 0u);
  }
  EXPECT_FALSE(m->state_dict_config().rank0_only) << "the guard restores the previous type";
  // A full dict loads back into the shards (and into a plain model).
  scramble(*m);
  m->load_state_dict(got);
  for (auto& [name, t] : m->state_dict()) EXPECT_TRUE(testing::all_close(t, want.at(name), 0, 0)) << name;
  models::GPT plain(tiny());
  plain.load_state_dict(got);
}

// Mixed precision gathers bfloat16 casts of the parameters for compute; a state dict holds the
// float32 masters (it held bf16(master), so a save and load moved every parameter).
TEST(FSDPStateDict, MixedPrecisionGivesTheMastersNotTheirComputeCasts) {
  std::vector<fsdp::ShardingStrategy> strategies = {fsdp::ShardingStrategy::FullShard, fsdp::ShardingStrategy::ShardGradOp,
                                                    fsdp::ShardingStrategy::ShardOptimizer, fsdp::ShardingStrategy::NoShard};
  const auto want = reference();
  for (auto strategy : strategies) {
    SCOPED_TRACE(fsdp::to_string(strategy));
    manual_seed(5);
    fsdp::FSDPOptions o;
    o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
    o.sharding_strategy = strategy;
    o.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16};
    auto m = fsdp::FullyShardedDataParallel::wrap(std::make_shared<models::GPT>(tiny()), testing::world(), o);
    {
      NoGradGuard g;
      (*m)(zeros({1, 4}, kLong));  // strategies that keep the gathered parameters now hold casts
    }
    auto got = m->state_dict();
    for (auto& [name, t] : want) {
      EXPECT_EQ(got.at(name).dtype(), kFloat) << name;
      EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
    }
    m->load_state_dict(got);
    for (auto& [name, t] : m->state_dict()) EXPECT_TRUE(testing::all_close(t, want.at(name), 0, 0)) << name;
  }
}

// A load is collective: a rank whose shard of a parameter is only padding (Linear(6, 6) over 4
// ranks: 2 rows each, none left for rank 3) must also gather the loaded values before its next
// forward. It kept its full parameters from before the load.
TEST(FSDPStateDict, ALoadReachesARankWhoseShardIsOnlyPadding) {
  auto build = [](uint64_t seed) {
    manual_seed(seed);
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(6, 6), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(6, 3)});
  };
  for (auto strategy : {fsdp::ShardingStrategy::ShardOptimizer, fsdp::ShardingStrategy::ShardGradOp}) {
    SCOPED_TRACE(fsdp::to_string(strategy));
    auto ref = build(1);
    auto m = fsdp::FullyShardedDataParallel::wrap(build(2), testing::world(), {.sharding_strategy = strategy});
    const Tensor x = ones({2, 6});
    NoGradGuard g;
    (*m)(x);  // the full parameters persist from here on
    m->load_state_dict(ref->state_dict());
    EXPECT_TRUE(testing::all_close((*m)(x), (*ref)(x), 0, 0)) << "rank " << testing::world()->rank();
  }
}

TEST(FSDPStateDict, ShardedRowsReassembleAndLoadBack) {
  auto& pg = testing::world();
  for (auto strategy : {fsdp::ShardingStrategy::FullShard, fsdp::ShardingStrategy::NoShard}) {
    auto m = sharded(strategy);
    m->set_state_dict_type({.type = StateDictType::Sharded});
    auto sd = m->state_dict();
    auto origin = nn::state_dict_origin(sd);
    EXPECT_EQ(origin.kind, nn::StateDictKind::Sharded);
    EXPECT_EQ(origin.world, pg->size());
    // Every rank's rows, placed by their offsets, give the full tensor.
    for (auto& [name, whole] : reference()) {
      if (!sd.count(nn::kShardEntryPrefix + name)) continue;  // buffers are whole
      const Tensor rows = sd.at(name).contiguous();
      const Tensor meta = sd.at(nn::kShardEntryPrefix + name);
      EXPECT_EQ(meta.data_ptr<int64_t>()[1], whole.size(0)) << name;
      Tensor placed = zeros(whole.sizes(), whole.dtype());
      if (rows.size(0) > 0) placed.narrow(0, meta.data_ptr<int64_t>()[0], rows.size(0)).copy_(rows);
      if (strategy == fsdp::ShardingStrategy::FullShard && pg->size() > 1) pg->all_reduce(placed, dist::ReduceOp::Sum);
      EXPECT_TRUE(testing::all_close(placed, whole, 0, 0)) << name;
    }
    // Views of the live shards unless offloaded: a copy survives scrambling, a view does not.
    auto copy = [&] {
      fsdp::FullyShardedDataParallel::StateDictTypeGuard g(*m, {.type = StateDictType::Sharded, .offload_to_cpu = true});
      return m->state_dict();
    }();
    scramble(*m);
    EXPECT_EQ(sd.at("lm_head.weight").sum().item<float>(), 0.5f * sd.at("lm_head.weight").numel());
    m->load_state_dict(copy);
    for (auto& [name, t] : m->full_state_dict()) EXPECT_TRUE(testing::all_close(t, reference().at(name), 0, 0)) << name;
  }
}

TEST(FSDPStateDict, ShardedHoldingEveryRowLoadsIntoAnyLayout) {
  auto& pg = testing::world();
  // A sharded dict as one rank of a world of one writes it: every row, offset 0.
  std::map<std::string, Tensor> all_rows = reference();
  for (auto& [name, p] : models::GPT(tiny()).named_parameters())
    all_rows[nn::kShardEntryPrefix + name] = tensor(std::vector<int64_t>{0, p.size(0)});
  nn::mark_state_dict(all_rows, {nn::StateDictKind::Sharded, 0, 1});
  auto m = sharded();
  scramble(*m);
  m->set_state_dict_type({.type = StateDictType::Sharded});
  m->load_state_dict(all_rows);
  for (auto& [name, t] : m->full_state_dict()) EXPECT_TRUE(testing::all_close(t, reference().at(name), 0, 0)) << name;
  // Row ranges that do not fit the tensor are refused (no overflow on huge offsets).
  auto bad = all_rows;
  bad[nn::kShardEntryPrefix + std::string("wte.weight")] =
      tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::max() - 1, tiny().vocab_size});
  EXPECT_NE(error_of([&] { m->load_state_dict(bad); }).find("past the 16 rows of the whole tensor"), std::string::npos);
  bad[nn::kShardEntryPrefix + std::string("wte.weight")] = tensor(std::vector<int64_t>{0, 99});
  EXPECT_NE(error_of([&] { m->load_state_dict(bad); }).find("is part of a tensor of shape [99, 8]"), std::string::npos);
  if (pg->size() == 1) return;
  // A dict holding only rank 0's rows cannot fill another rank's shards: loading is collective,
  // so every rank fails with that rank's reason.
  m->set_state_dict_type({.type = StateDictType::Sharded});
  auto sd = m->state_dict();
  Tensor rows = tensor(std::vector<int64_t>{0, tiny().vocab_size});  // claims to start at row 0
  if (pg->rank() != 0) sd[nn::kShardEntryPrefix + std::string("wte.weight")] = rows.clone();
  const std::string e = error_of([&] { m->load_state_dict(sd); });
  EXPECT_NE(e.find("needs rows"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 1: "), std::string::npos) << e;
}

TEST(FSDPStateDict, LocalIsThePaddedShardsOfThisRankOnly) {
  auto& pg = testing::world();
  auto m = sharded();
  m->set_state_dict_type({.type = StateDictType::Local, .offload_to_cpu = true});
  auto sd = m->state_dict();
  for (auto& [name, p] : m->named_parameters()) EXPECT_TRUE(testing::all_close(sd.at(name), p, 0, 0)) << name;
  scramble(*m);
  m->load_state_dict(sd);
  for (auto& [name, t] : m->full_state_dict()) EXPECT_TRUE(testing::all_close(t, reference().at(name), 0, 0)) << name;
  // Another rank's (or world's) local dict is refused.
  auto other = sd;
  nn::mark_state_dict(other, {nn::StateDictKind::Local, (pg->rank() + 1) % pg->size(), pg->size() + 1});
  EXPECT_NE(error_of([&] { m->load_state_dict(other); }).find("loads only into the rank and world size that wrote it"),
            std::string::npos);
}

TEST(FSDPStateDict, KindsDoNotMix) {
  auto m = sharded();
  m->set_state_dict_type({.type = StateDictType::Sharded});
  auto sharded_sd = m->state_dict();
  m->set_state_dict_type({.type = StateDictType::Full});
  const std::string e = error_of([&] { m->load_state_dict(sharded_sd); });
  EXPECT_NE(e.find("got a sharded state dict (rank"), std::string::npos) << e;
  EXPECT_NE(e.find("the model's state-dict type is full"), std::string::npos) << e;
  // A plain model says where the dict came from, also after a round trip through a file.
  const std::string path = "/tmp/strider_sharded_sd_" + std::to_string(testing::world()->rank()) + ".safetensors";
  io::save_safetensors(path, sharded_sd);
  models::GPT plain(tiny());
  const std::string p = error_of([&] { plain.load_state_dict(io::load_safetensors(path).tensors); });
  EXPECT_NE(p.find("takes a full state dict, but this is a sharded state dict"), std::string::npos) << p;
  std::remove(path.c_str());
  // A full dict where a sharded one is expected.
  auto full = m->state_dict();
  m->set_state_dict_type({.type = StateDictType::Sharded});
  EXPECT_NE(error_of([&] { m->load_state_dict(full); }).find("got a full state dict"), std::string::npos);
}

TEST(FSDPStateDict, LoadingIsAllOrNothingAndStrict) {
  auto m = sharded();
  auto before = m->full_state_dict();
  auto bad = before;
  bad["ln_f.weight"] = zeros({3});
  bad["h.0.attn.c_attn.weight"] = zeros(bad["h.0.attn.c_attn.weight"].sizes());
  EXPECT_NE(error_of([&] { m->load_state_dict(bad); }).find("'ln_f.weight' has shape [3]"), std::string::npos);
  for (auto& [name, t] : m->full_state_dict()) EXPECT_TRUE(testing::all_close(t, before.at(name), 0, 0)) << name;
  auto missing = before;
  missing.erase("wpe.weight");
  EXPECT_NE(error_of([&] { m->load_state_dict(missing); }).find("1 missing key(s): 'wpe.weight'"), std::string::npos);
  const nn::IncompatibleKeys keys = m->load_state_dict(missing, /*strict=*/false);
  EXPECT_EQ(keys.missing_keys, std::vector<std::string>{"wpe.weight"});
  EXPECT_TRUE(keys.unexpected_keys.empty());
  auto extra = before;
  extra["typo.weight"] = zeros({1});
  EXPECT_NE(error_of([&] { m->load_state_dict(extra); }).find("1 unexpected key(s): 'typo.weight'"), std::string::npos);
  // A wrapper's prefix on every key: every key listed, and the rename suggested, not strict=false.
  const std::string renamed = error_of([&] { m->load_state_dict(nn::add_key_prefix(before, "module.")); });
  EXPECT_NE(renamed.find(std::to_string(before.size()) + " missing key(s)"), std::string::npos) << renamed;
  EXPECT_NE(renamed.find("nn::strip_key_prefix(state, \"module.\")"), std::string::npos) << renamed;
  EXPECT_EQ(renamed.find("strict = false"), std::string::npos) << renamed;
  EXPECT_TRUE(m->load_state_dict(nn::strip_key_prefix(nn::add_key_prefix(before, "module."), "module.")).empty());
}

// One rank's dict is wrong: every rank fails, naming that rank, and none changes its shards (a
// rank that checked only its own dict would have loaded its rows of the others' good values).
TEST(FSDPStateDict, OneRanksBadDictFailsOnEveryRank) {
  auto m = sharded();
  auto before = m->full_state_dict();
  const int last = testing::world()->size() - 1;
  auto dict = before;
  for (auto& [name, t] : dict) t = t + 1.0;
  if (testing::world()->rank() == last) dict["h.0.attn.c_attn.weight"] = zeros({3, 8});
  const std::string error = error_of([&] { m->load_state_dict(dict); });
  EXPECT_NE(error.find("'h.0.attn.c_attn.weight' has shape [3, 8]"), std::string::npos) << error;
  if (testing::world()->size() > 1)
    EXPECT_NE(error.find("rank " + std::to_string(last) + ": "), std::string::npos) << error;
  for (auto& [name, t] : m->full_state_dict()) EXPECT_TRUE(testing::all_close(t, before.at(name), 0, 0)) << name;
}

}  // namespace
}  // namespace strider
