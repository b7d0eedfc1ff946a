// Distributed checkpoints move between world sizes and strategies: a GPT trained and saved at
// this world size under one strategy loads, at every smaller world size (sub-groups of this
// one) and under every strategy (plain, DDP, each FSDP plan), into exactly the saved parameters
// and optimizer moments; consolidated into one file, it runs in a single process.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <fstream>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

namespace F = nn::functional;

models::GPTConfig tiny() { return {.vocab_size = 16, .block_size = 4, .n_layer = 2, .n_head = 2, .n_embd = 8}; }

struct Wrapped {
  std::shared_ptr<nn::Module> model;
  fsdp::FullyShardedDataParallel* engine = nullptr;  // null: plain
};

Wrapped wrap(uint64_t seed, const std::string& strategy, std::shared_ptr<dist::ProcessGroup> pg) {
  manual_seed(seed);
  auto gpt = std::make_shared<models::GPT>(tiny());
  if (strategy == "plain") return {gpt, nullptr};
  if (strategy == "ddp") {
    auto d = fsdp::DistributedDataParallel::wrap(gpt, pg, {.bucket_cap_mb = 0.001});
    return {d, &d->engine()};
  }
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.sharding_strategy = fsdp::parse_sharding_strategy(strategy);
  if (strategy.rfind("hybrid", 0) == 0) o.shard_group_size = 2;
  auto m = fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
  return {m, m.get()};
}

std::map<std::string, Tensor> full_params(Wrapped& w) {
  if (w.engine) return w.engine->full_state_dict();
  return w.model->state_dict();
}

optim::OptimizerState full_moments(Wrapped& w, optim::Optimizer& opt) {
  if (w.engine) return w.engine->full_optimizer_state_dict(opt);
  return opt.state();
}

// One directory every rank agrees on.
std::string shared_dir(dist::ProcessGroup& pg, const std::string& name) {
  const std::string mine = (std::filesystem::temp_directory_path() /
                            ("strider_reshard_" + name + "_" + std::to_string(::getpid()))).string();
  return dist::all_gather_strings(pg, "test dir", mine)[0];
}

TEST(CheckpointReshard, LoadsAtEveryWorldSizeAndStrategy) {
  auto& pg = testing::world();
  const int W = pg->size(), rank = pg->rank();
  std::vector<std::string> save_as = {"full_shard", "ddp"};
  if (W % 2 == 0) save_as.push_back("hybrid_shard");
  if (W == 1) save_as.push_back("plain");
  for (const std::string& saved_strategy : save_as) {
    SCOPED_TRACE("saved under " + saved_strategy + " at " + std::to_string(W) + " ranks");
    const std::string dir = shared_dir(*pg, saved_strategy);
    Wrapped a = wrap(5, saved_strategy, pg);
    optim::AdamW opt(a.model->named_parameters(), {.lr = 1e-2});
    manual_seed(11);
    const Tensor x = (rand({2, 4}) * 16.0).to(kLong), y = (rand({2, 4}) * 16.0).to(kLong);
    for (int step = 0; step < 2; ++step) {
      Tensor loss = F::cross_entropy((*a.model)(x).reshape({-1, 16}), y.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    const auto want_params = full_params(a);
    const auto want_moments = full_moments(a, opt);
    checkpoint::Checkpointer(dir, pg).save(2, {.model = a.model.get(), .optimizer = &opt});

    for (int w = 1; w <= W; ++w) {
      // Ranks [0, w) load at world size w; the others at W - w.
      auto sub = pg->split(rank < w ? 0 : 1, rank);
      std::vector<std::string> load_as = {"full_shard", "shard_grad_op", "shard_optimizer", "no_shard", "ddp"};
      if (sub->size() == 1) load_as.push_back("plain");
      if (sub->size() % 2 == 0) load_as.push_back("hybrid_shard");
      for (const std::string& strategy : load_as) {
        SCOPED_TRACE("loaded under " + strategy + " at " + std::to_string(sub->size()) + " ranks");
        Wrapped b = wrap(9, strategy, sub);
        optim::AdamW opt_b(b.model->named_parameters(), {.lr = 1e-2});
        checkpoint::load(dir, {.model = b.model.get(), .optimizer = &opt_b}, sub.get());
        EXPECT_EQ(opt_b.step_count(), 2);
        const auto got = full_params(b);
        ASSERT_EQ(got.size(), want_params.size());
        for (auto& [name, t] : want_params) EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
        const auto moments = full_moments(b, opt_b);
        ASSERT_EQ(moments.size(), want_moments.size());
        for (auto& [name, keys] : want_moments)
          for (auto& [k, t] : keys) EXPECT_TRUE(testing::all_close(moments.at(name).at(k), t, 0, 0)) << name << k;
      }
    }
    pg->barrier();
    if (rank == 0) std::filesystem::remove_all(dir);
  }
}

// A rank that cannot read its part fails the load on every rank, and none changes.
TEST(CheckpointReshard, OneRanksFailureFailsEveryRankAndChangesNothing) {
  auto& pg = testing::world();
  const std::string dir = shared_dir(*pg, "fail");
  Wrapped a = wrap(5, "full_shard", pg);
  checkpoint::Checkpointer(dir, pg).save(0, {.model = a.model.get()});
  pg->barrier();
  const std::string last_file = dir + "/" + checkpoint::checkpoint_dir_name(0) + "/rank-" +
                                std::string(5 - std::to_string(pg->size() - 1).size(), '0') +
                                std::to_string(pg->size() - 1) + "-of-" +
                                std::string(5 - std::to_string(pg->size()).size(), '0') + std::to_string(pg->size()) +
                                ".safetensors";
  if (pg->rank() == 0) std::filesystem::resize_file(last_file, std::filesystem::file_size(last_file) - 1);
  pg->barrier();
  Wrapped b = wrap(9, "full_shard", pg);
  const auto before = full_params(b);
  std::string error;
  try {
    checkpoint::load(dir, {.model = b.model.get()}, pg.get());
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("truncated or replaced"), std::string::npos) << error;
  EXPECT_NE(error.find("nothing was changed"), std::string::npos) << error;
  for (auto& [name, t] : full_params(b)) EXPECT_TRUE(testing::all_close(t, before.at(name), 0, 0)) << name;
  pg->barrier();
  if (pg->rank() == 0) std::filesystem::remove_all(dir);
}

// A re-sealed manifest that sends each of two ranks' rows of one tensor to the other rank's file,
// at the offset where that file holds the tensor: names, dtypes, shapes and offsets agree with
// the files' headers, and only the rows each rank recorded at save tell the halves apart. Every
// rank names the swap and none changes.
TEST(CheckpointReshard, RowsSwappedBetweenRankFilesFailEveryRank) {
  auto& pg = testing::world();
  if (pg->size() < 2) GTEST_SKIP() << "needs two rank files";
  const std::string dir = shared_dir(*pg, "swapped");
  Wrapped a = wrap(5, "full_shard", pg);
  const std::string saved = checkpoint::Checkpointer(dir, pg).save(0, {.model = a.model.get()});
  std::string key;
  if (pg->rank() == 0) {
    checkpoint::Manifest m = checkpoint::read_manifest(saved);
    for (auto& [k, t] : m.tensors) {
      if (t.shards.size() < 2 || !key.empty()) continue;
      auto& s = t.shards;
      if (s[0].row_end - s[0].row_begin != s[1].row_end - s[1].row_begin || s[0].file == s[1].file) continue;
      key = k;
      std::swap(s[0].file, s[1].file);
      std::swap(s[0].offset, s[1].offset);
    }
    std::ofstream(saved + "/" + checkpoint::kManifestName, std::ios::trunc) << checkpoint::format_manifest(m);
  }
  key = dist::all_gather_strings(*pg, "the swapped tensor", key)[0];  // after rank 0 wrote it
  ASSERT_FALSE(key.empty());
  Wrapped b = wrap(9, "full_shard", pg);
  const auto before = full_params(b);
  std::string error;
  try {
    checkpoint::load(dir, {.model = b.model.get()}, pg.get());
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("of tensor '" + key + "' but the manifest reads them as its rows ["), std::string::npos) << error;
  EXPECT_NE(error.find("the manifest does not describe this file"), std::string::npos) << error;
  EXPECT_NE(error.find("nothing was changed"), std::string::npos) << error;
  for (auto& [name, t] : full_params(b)) EXPECT_TRUE(testing::all_close(t, before.at(name), 0, 0)) << name;
  pg->barrier();
  if (pg->rank() == 0) std::filesystem::remove_all(dir);
}

// A checkpoint saved under FULL_SHARD at this world size, consolidated offline into one file,
// loads into a single-process model that computes what the sharded model computes.
TEST(CheckpointReshard, ConsolidatedFullShardCheckpointRunsInOneProcess) {
  auto& pg = testing::world();
  const std::string dir = shared_dir(*pg, "consolidate");
  Wrapped a = wrap(5, "full_shard", pg);
  optim::AdamW opt(a.model->named_parameters(), {.lr = 1e-2});
  manual_seed(11);
  const Tensor x = (rand({2, 4}) * 16.0).to(kLong), y = (rand({2, 4}) * 16.0).to(kLong);
  Tensor loss = F::cross_entropy((*a.model)(x).reshape({-1, 16}), y.reshape({-1}));
  loss.backward();
  opt.step();
  checkpoint::Checkpointer(dir, pg).save(1, {.model = a.model.get(), .optimizer = &opt});
  const Tensor want = (*a.model)(x);
  const std::string file = dir + "/model-" + std::to_string(pg->rank()) + ".safetensors";
  checkpoint::consolidate_checkpoint(dir, file);  // each rank on its own, no communication
  manual_seed(99);
  models::GPT alone(tiny());
  alone.load_state_dict(io::load_safetensors(file, {.require_checksum = true}).tensors);
  EXPECT_TRUE(testing::all_close(alone(x), want, 0, 0));
  pg->barrier();
  if (pg->rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strider
