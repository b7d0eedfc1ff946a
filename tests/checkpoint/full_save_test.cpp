// A full save streams every rank's rows to rank 0 a bounded piece at a time and writes the
// same file, byte for byte, that consolidating a sharded checkpoint of the same state writes,
// under every strategy and world size; it holds exactly the gathered parameters; a failure on
// rank 0 or ranks with different models fail every rank and leave no file.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

namespace F = nn::functional;

models::GPTConfig tiny(int64_t n_embd = 8) {
  return {.vocab_size = 16, .block_size = 4, .n_layer = 2, .n_head = 2, .n_embd = n_embd};
}

std::shared_ptr<nn::Module> wrap(const std::string& strategy, std::shared_ptr<dist::ProcessGroup> pg) {
  manual_seed(5);
  auto gpt = std::make_shared<models::GPT>(tiny());
  if (strategy == "plain") return gpt;
  if (strategy == "ddp") return fsdp::DistributedDataParallel::wrap(gpt, pg, {.bucket_cap_mb = 0.001});
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  o.sharding_strategy = fsdp::parse_sharding_strategy(strategy);
  if (strategy.rfind("hybrid", 0) == 0) o.shard_group_size = 2;
  return fsdp::FullyShardedDataParallel::wrap(gpt, pg, o);
}

std::string shared_path(dist::ProcessGroup& pg, const std::string& name) {
  const std::string mine = (std::filesystem::temp_directory_path() /
                            ("strider_full_save_" + name + "_" + std::to_string(::getpid()))).string();
  return dist::all_gather_strings(pg, "test path", mine)[0];
}

std::string bytes_of(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FullSave, SameBytesAsConsolidatingASavedCheckpoint) {
  auto& pg = testing::world();
  const int W = pg->size();
  std::vector<std::string> strategies = {"full_shard", "shard_grad_op", "ddp"};
  if (W % 2 == 0) strategies.push_back("hybrid_shard");
  if (W == 1) strategies.push_back("plain");
  for (const std::string& strategy : strategies) {
    SCOPED_TRACE(strategy + " at " + std::to_string(W) + " ranks");
    const std::string base = shared_path(*pg, strategy);
    std::shared_ptr<nn::Module> model = wrap(strategy, pg);
    optim::AdamW opt(model->named_parameters(), {.lr = 1e-2});
    manual_seed(11);
    const Tensor x = (rand({2, 4}) * 16.0).to(kLong), y = (rand({2, 4}) * 16.0).to(kLong);
    for (int step = 0; step < 2; ++step) {
      Tensor loss = F::cross_entropy((*model)(x).reshape({-1, 16}), y.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    checkpoint::Checkpointer(base + "_run", pg).save(2, {.model = model.get(), .optimizer = &opt});
    // Whole pieces, and pieces of 40 bytes (rows split across several transfers, one row when a
    // row is larger): the same file.
    const auto whole = checkpoint::save_full(base + ".safetensors", *model, 2, pg.get());
    const auto small = checkpoint::save_full(base + "_small.safetensors", *model, 2, pg.get(), {.piece_bytes = 40});
    EXPECT_LE(small.max_piece_bytes, 32u * 4u);  // one row of the widest tensor at most (the MLP's 4 x 8 wide)
    auto want_params = model->state_dict();
    if (auto* engine = dynamic_cast<fsdp::FullyShardedDataParallel*>(model.get())) want_params = engine->full_state_dict();
    if (auto* ddp = dynamic_cast<fsdp::DistributedDataParallel*>(model.get())) want_params = ddp->engine().full_state_dict();
    if (pg->rank() == 0) {
      checkpoint::consolidate_checkpoint(base + "_run", base + "_consolidated.safetensors");
      const std::string want = bytes_of(base + "_consolidated.safetensors");
      EXPECT_EQ(bytes_of(base + ".safetensors"), want);
      EXPECT_EQ(bytes_of(base + "_small.safetensors"), want);
      EXPECT_EQ(whole.bytes, want.size());
      // The parameters one process gets from the file are the trained ones.
      manual_seed(1);
      models::GPT local(tiny());
      local.load_state_dict(io::load_safetensors(base + ".safetensors", {.require_checksum = true}).tensors);
      for (const auto& [name, t] : local.state_dict()) EXPECT_TRUE(testing::all_close(t, want_params.at(name), 0, 0)) << name;
    } else {
      EXPECT_FALSE(std::filesystem::exists(base + ".safetensors.tmp"));
    }
    pg->barrier();
    if (pg->rank() == 0)
      for (const char* s : {".safetensors", "_small.safetensors", "_consolidated.safetensors", "_run"})
        std::filesystem::remove_all(base + s);
  }
}

TEST(FullSave, AWriteErrorOnRankZeroFailsEveryRankAndLeavesNoFile) {
  auto& pg = testing::world();
  std::shared_ptr<nn::Module> model = wrap("full_shard", pg);
  const std::string dir = shared_path(*pg, "unwritable");
  const std::string file = dir + "/no/such/dir/model.safetensors";
  std::string err = "no error";
  try {
    checkpoint::save_full(file, *model, 0, pg.get());
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("full save"), std::string::npos) << err;
  EXPECT_NE(err.find("on rank 0 failed"), std::string::npos) << err;
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(FullSave, RanksWithDifferentModelsAreNamed) {
  auto& pg = testing::world();
  if (pg->size() < 2) GTEST_SKIP() << "needs two ranks";
  manual_seed(5);
  models::GPT gpt(tiny(pg->rank() == 1 ? 12 : 8));  // rank 1 built a wider model
  const std::string file = shared_path(*pg, "mismatch") + ".safetensors";
  std::string err = "no error";
  try {
    checkpoint::save_full(file, gpt, 0, pg.get());
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("on rank 1 but"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(file));
}

}  // namespace
}  // namespace strider
