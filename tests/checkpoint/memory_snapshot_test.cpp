// In-memory snapshots survive the loss of a host: ranks are placed on named hosts (each host
// its own store directory, as each real host has its own /dev/shm), a GPT trained under
// FULL_SHARD is snapshotted, one host's store is removed as if the host were gone, and the
// surviving ranks (a smaller world) recover the snapshot from their stores and their partners'
// copies into exactly the saved parameters and optimizer moments (the last snapshot overlapped
// with training: begun, then committed two steps later). A snapshot whose rank file is on no
// surviving host is refused, naming the file.
#include <gtest/gtest.h>
#include <strider/strider.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

namespace F = nn::functional;
namespace fs = std::filesystem;

struct Trained {
  std::shared_ptr<fsdp::FullyShardedDataParallel> model;
  std::unique_ptr<optim::AdamW> opt;
};

std::shared_ptr<fsdp::FullyShardedDataParallel> gpt(std::shared_ptr<dist::ProcessGroup> pg) {
  manual_seed(5);
  auto m = std::make_shared<models::GPT>(
      models::GPTConfig{.vocab_size = 16, .block_size = 4, .n_layer = 2, .n_head = 2, .n_embd = 8});
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"});
  return fsdp::FullyShardedDataParallel::wrap(m, std::move(pg), o);
}

void train(Trained& t, int steps) {
  manual_seed(11);
  const Tensor x = (rand({2, 4}) * 16.0).to(kLong), y = (rand({2, 4}) * 16.0).to(kLong);
  for (int i = 0; i < steps; ++i) {
    Tensor loss = F::cross_entropy((*t.model)(x).reshape({-1, 16}), y.reshape({-1}));
    t.opt->zero_grad();
    loss.backward();
    t.opt->step();
  }
}

// One directory every rank agrees on; host h's store is <it>/<h>.
std::string shared_dir(dist::ProcessGroup& pg, const std::string& name) {
  const std::string mine =
      (fs::temp_directory_path() / ("strider_memsnap_" + name + "_" + std::to_string(::getpid()))).string();
  return dist::all_gather_strings(pg, "test dir", mine)[0];
}

TEST(MemorySnapshot, SurvivesLosingAHost) {
  auto& pg = testing::world();
  const int W = pg->size(), rank = pg->rank();
  const int per_host = W >= 4 ? 2 : 1;
  const std::string host = "h" + std::to_string(rank / per_host);
  const std::string base = shared_dir(*pg, "host");
  Trained a{gpt(pg), nullptr};
  a.opt = std::make_unique<optim::AdamW>(a.model->named_parameters(), optim::AdamWOptions{.lr = 1e-2});
  checkpoint::MemorySnapshotter snapshots(base + "/" + host, pg, {.host = host, .chunk_bytes = 4096});
  EXPECT_EQ(snapshots.partner(), W / per_host > 1 ? (rank + per_host) % W : -1);
  // A snapshot of a later step left by an earlier incarnation of the run: the next save must
  // not leave it to be found newest.
  snapshots.save(7, {.model = a.model.get(), .optimizer = a.opt.get()});
  train(a, 2);
  snapshots.save(2, {.model = a.model.get(), .optimizer = a.opt.get()});
  train(a, 1);
  const auto want_params = a.model->full_state_dict();
  const auto want_moments = a.model->full_optimizer_state_dict(*a.opt);
  // Step 3 overlapped: training goes on (its collectives beside the copy's) until the commit,
  // and the snapshot holds step 3's state, not what training made of it since.
  snapshots.begin(3, {.model = a.model.get(), .optimizer = a.opt.get()});
  EXPECT_TRUE(snapshots.pending());
  const auto before = checkpoint::committed_checkpoints(base + "/" + host);
  EXPECT_TRUE(!before.empty() && before.back().step == 2) << "newest before the commit";
  train(a, 2);
  const checkpoint::MemorySnapshotStats st = snapshots.commit();
  pg->barrier();  // every host's lead has removed the older snapshots (after the commit's last collective)
  EXPECT_FALSE(snapshots.pending());
  EXPECT_EQ(st.step, 3);
  EXPECT_GT(st.own_bytes, 4096u);  // several chunks travel
  EXPECT_EQ(st.kept_for_partner > 0, W / per_host > 1);
  const auto kept = checkpoint::committed_checkpoints(base + "/" + host);
  ASSERT_EQ(kept.size(), 1u) << "the snapshots of steps 2 and 7 are gone";
  EXPECT_EQ(kept[0].step, 3);

  // The last host is lost (with one host: only the processes, its store stays).
  const std::string lost = "h" + std::to_string((W - 1) / per_host);
  pg->barrier();
  if (rank == 0 && W / per_host > 1) fs::remove_all(base + "/" + lost);
  pg->barrier();
  const bool survivor = W / per_host == 1 || host != lost;
  auto sub = pg->split(survivor ? 0 : 1, rank);
  if (survivor) {
    std::string why;
    const auto got = checkpoint::recover_memory_snapshot(base + "/" + host, *sub, -1, {.host = host, .chunk_bytes = 4096},
                                                         &why);
    ASSERT_TRUE(got.has_value()) << why;
    EXPECT_EQ(got->step, 3);
    EXPECT_EQ(got->saved_world, W);
    Trained b{gpt(sub), nullptr};
    b.opt = std::make_unique<optim::AdamW>(b.model->named_parameters(), optim::AdamWOptions{.lr = 1e-2});
    checkpoint::load(got->dir, {.model = b.model.get(), .optimizer = b.opt.get()}, sub.get());
    EXPECT_EQ(b.opt->step_count(), 3);
    const auto params = b.model->full_state_dict();
    ASSERT_EQ(params.size(), want_params.size());
    for (auto& [name, t] : want_params) EXPECT_TRUE(testing::all_close(params.at(name), t, 0, 0)) << name;
    const auto moments = b.model->full_optimizer_state_dict(*b.opt);
    for (auto& [name, keys] : want_moments)
      for (auto& [k, t] : keys) EXPECT_TRUE(testing::all_close(moments.at(name).at(k), t, 0, 0)) << name << k;
    // Another relaunch finds the same snapshot; after it, none newer than its step.
    EXPECT_EQ(checkpoint::recover_memory_snapshot(base + "/" + host, *sub, -1, {.host = host})->step, 3);
    EXPECT_FALSE(checkpoint::recover_memory_snapshot(base + "/" + host, *sub, 3, {.host = host}).has_value());
  }
  pg->barrier();
  if (rank == 0) fs::remove_all(base);
}

// With one rank per host, rank 1's file lives on hosts 1 (its own) and 2 (its partner's copy):
// losing both loses it, and recovery says which file is gone instead of loading a partial state.
TEST(MemorySnapshot, NamesTheFileNoSurvivingHostHolds) {
  auto& pg = testing::world();
  const int W = pg->size(), rank = pg->rank();
  if (W < 3) GTEST_SKIP() << "needs three hosts";
  const std::string host = "h" + std::to_string(rank);
  const std::string base = shared_dir(*pg, "lost");
  Trained a{gpt(pg), nullptr};
  a.opt = std::make_unique<optim::AdamW>(a.model->named_parameters(), optim::AdamWOptions{.lr = 1e-2});
  checkpoint::MemorySnapshotter snapshots(base + "/" + host, pg, {.host = host});
  train(a, 1);
  snapshots.save(1, {.model = a.model.get(), .optimizer = a.opt.get()});
  pg->barrier();
  if (rank == 0) fs::remove_all(base + "/h1"), fs::remove_all(base + "/h2");
  pg->barrier();
  const bool survivor = rank != 1 && rank != 2;
  auto sub = pg->split(survivor ? 0 : 1, rank);
  if (survivor) {
    std::string why;
    EXPECT_FALSE(checkpoint::recover_memory_snapshot(base + "/" + host, *sub, -1, {.host = host}, &why).has_value());
    EXPECT_NE(why.find("rank 1's file of the snapshot of step 1"), std::string::npos) << why;
    EXPECT_TRUE(checkpoint::committed_checkpoints(base + "/" + host).empty()) << "a partial snapshot stays behind";
  }
  pg->barrier();
  if (rank == 0) fs::remove_all(base);
}

// A copy that fails its checksum is as good as missing: with a byte flipped in every file of
// host 0's store (each also held intact on another host), recovery takes the intact copies and
// replaces host 0's, and the snapshot loads into exactly the saved state. Before, the damaged
// copy counted as held (its size was right) and the snapshot could not be loaded.
TEST(MemorySnapshot, ACopyFailingItsChecksumIsReplacedByAnIntactOne) {
  auto& pg = testing::world();
  const int W = pg->size(), rank = pg->rank();
  if (W < 2) GTEST_SKIP() << "needs two hosts";
  const std::string host = "h" + std::to_string(rank);
  const std::string base = shared_dir(*pg, "flipped");
  Trained a{gpt(pg), nullptr};
  a.opt = std::make_unique<optim::AdamW>(a.model->named_parameters(), optim::AdamWOptions{.lr = 1e-2});
  checkpoint::MemorySnapshotter snapshots(base + "/" + host, pg, {.host = host});
  train(a, 1);
  snapshots.save(1, {.model = a.model.get(), .optimizer = a.opt.get()});
  const auto want_params = a.model->full_state_dict();
  pg->barrier();
  int flipped = 0;
  if (rank == 0)
    for (const auto& e : fs::directory_iterator(base + "/h0/" + checkpoint::checkpoint_dir_name(1))) {
      if (e.path().filename() == "manifest.json") continue;
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      const auto middle = static_cast<std::streamoff>(fs::file_size(e.path()) / 2);
      f.seekg(middle);
      const char c = static_cast<char>(f.get() ^ 0x01);
      f.seekp(middle);
      f.put(c);
      ++flipped;
    }
  pg->barrier();
  if (rank == 0) EXPECT_GE(flipped, 1);
  std::string why;
  const auto got = checkpoint::recover_memory_snapshot(base + "/" + host, *pg, -1, {.host = host}, &why);
  ASSERT_TRUE(got.has_value()) << why;
  EXPECT_EQ(got->step, 1);
  Trained b{gpt(pg), nullptr};
  b.opt = std::make_unique<optim::AdamW>(b.model->named_parameters(), optim::AdamWOptions{.lr = 1e-2});
  checkpoint::load(got->dir, {.model = b.model.get(), .optimizer = b.opt.get()}, pg.get());
  const auto params = b.model->full_state_dict();
  for (auto& [name, t] : want_params) EXPECT_TRUE(testing::all_close(params.at(name), t, 0, 0)) << name;
  pg->barrier();
  if (rank == 0) fs::remove_all(base);
}

}  // namespace
}  // namespace strider
