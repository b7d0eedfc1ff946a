// Asynchronous saves under FULL_SHARD, SHARD_GRAD_OP and DDP write, on every rank, the files
// the blocking Checkpointer writes at the same steps, byte for byte; each commits at the next
// optimizer step on every rank together, and ranks resume from it exactly.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/mpi_world.h"

namespace strider {
namespace {

namespace F = nn::functional;
namespace fs = std::filesystem;

std::shared_ptr<nn::Module> wrap(const std::string& strategy, std::shared_ptr<dist::ProcessGroup> pg) {
  manual_seed(5);
  auto gpt = std::make_shared<models::GPT>(
      models::GPTConfig{.vocab_size = 16, .block_size = 4, .n_layer = 2, .n_head = 2, .n_embd = 8});
  if (strategy == "ddp") return fsdp::DistributedDataParallel::wrap(gpt, pg, {.bucket_cap_mb = 0.001});
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.sharding_strategy = fsdp::parse_sharding_strategy(strategy);
  return fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
}

std::string shared_dir(dist::ProcessGroup& pg, const std::string& name) {
  const std::string mine =
      (fs::temp_directory_path() / ("strider_async_" + name + "_" + std::to_string(::getpid()))).string();
  return dist::all_gather_strings(pg, "test dir", mine)[0];
}

std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      out[fs::relative(e.path(), dir).string()] = s.str();
    }
  return out;
}

TEST(AsyncCheckpointDist, SameFilesAsBlockingSavesOnEveryRank) {
  auto& pg = testing::world();
  for (const std::string strategy : {"full_shard", "shard_grad_op", "ddp"}) {
    SCOPED_TRACE(strategy + " at " + std::to_string(pg->size()) + " ranks");
    const std::string base = shared_dir(*pg, strategy);
    for (bool async : {false, true}) {
      std::shared_ptr<nn::Module> model = wrap(strategy, pg);
      optim::AdamW opt(model->named_parameters(), {.lr = 1e-2});
      checkpoint::Checkpointer blocking(base + "/sync", pg, {.keep_last = 0});
      checkpoint::AsyncCheckpointer background(base + "/async", pg, {.keep_last = 0});
      manual_seed(11 + pg->rank());
      for (int step = 1; step <= 4; ++step) {
        const Tensor x = (rand({2, 4}) * 16.0).to(kLong), y = (rand({2, 4}) * 16.0).to(kLong);
        Tensor loss = F::cross_entropy((*model)(x).reshape({-1, 16}), y.reshape({-1}));
        opt.zero_grad();
        loss.backward();
        opt.step();
        if (async) background.save(step, {.model = model.get(), .optimizer = &opt});
        else blocking.save(step, {.model = model.get(), .optimizer = &opt});
      }
      if (async) EXPECT_EQ(background.wait(), base + "/async/checkpoint-000000004");
    }
    pg->barrier();
    if (pg->rank() == 0) {
      const auto want = files_of(base + "/sync"), got = files_of(base + "/async");
      EXPECT_EQ(want.size(), 4u * (1u + static_cast<size_t>(pg->size())));
      ASSERT_EQ(got.size(), want.size());
      for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs";
      fs::remove_all(base);
    }
    pg->barrier();
  }
}

}  // namespace
}  // namespace strider
