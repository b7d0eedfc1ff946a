// The asynchronous checkpointer writes, while training goes on, exactly the checkpoints the
// blocking one writes at the same steps (byte for byte); copies only the buffers; commits at
// the next optimizer step; and a parameter written behind its back fails that save by name
// while the previous checkpoint stays the latest.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/train_run.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::error_of;
using testing::make_run;
using testing::state_of;
using testing::temp_dir;
using testing::TrainRun;
namespace fs = std::filesystem;
namespace F = nn::functional;

void train_step(TrainRun& r, const Tensor& x, const Tensor& y) {
  Tensor loss = F::cross_entropy((*r.model)(x), y);
  r.opt->zero_grad();
  loss.backward();
  r.opt->step();
  r.sched->step();
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file of every checkpoint in `dir`, by relative path.
std::map<std::string, std::string> checkpoint_files(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().string().find("/checkpoint-") != std::string::npos)
      out[fs::relative(e.path(), dir).string()] = file_bytes(e.path());
  return out;
}

TEST(AsyncCheckpoint, WritesTheBlockingCheckpointsByteForByte) {
  const std::string sync_dir = temp_dir("async_ref"), async_dir = temp_dir("async");
  manual_seed(100);
  const Tensor x = randn({4, 1, 28, 28}), y = tensor(std::vector<int64_t>{1, 2, 3, 4});
  for (bool async : {false, true}) {
    TrainRun r = make_run(1, 0);
    checkpoint::DataPosition pos{.epoch = 0, .batches_done = 0, .global_batch_size = 4};
    checkpoint::Checkpointer blocking(sync_dir, nullptr, {.keep_last = 0});
    checkpoint::AsyncCheckpointer background(async_dir, nullptr, {.keep_last = 0});
    manual_seed(5);
    for (int step = 1; step <= 6; ++step) {
      train_step(r, x, y);  // the step's pre-hook commits the previous asynchronous save
      pos.batches_done = step;
      if (async) {
        background.save(step, state_of(r, &pos));
        if (step > 1) EXPECT_TRUE(fs::exists(async_dir + "/" + checkpoint::checkpoint_dir_name(step - 1)));
      } else {
        blocking.save(step, state_of(r, &pos));
      }
      (void)rand({2});  // the generator moves on after each save, as training's would
    }
    if (async) {
      EXPECT_EQ(background.wait(), async_dir + "/checkpoint-000000006");
      const auto st = background.stats();
      EXPECT_EQ(st.saves, 6);
      EXPECT_EQ(st.committed, 6);
      int64_t buffer_bytes = 0;
      for (auto& [name, b] : r.model->named_buffers()) buffer_bytes += b.numel() * static_cast<int64_t>(element_size(b.dtype()));
      EXPECT_LE(st.snapshot_bytes, static_cast<uint64_t>(buffer_bytes)) << "only buffers are copied";
    }
  }
  const auto want = checkpoint_files(sync_dir), got = checkpoint_files(async_dir);
  ASSERT_EQ(want.size(), 6u * 2u);  // a rank file and a manifest per step
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs";
  fs::remove_all(sync_dir);
  fs::remove_all(async_dir);
}

TEST(AsyncCheckpoint, AParameterWrittenDuringTheSaveFailsItByName) {
  const std::string dir = temp_dir("async_misuse");
  TrainRun r = make_run(1, 1);
  checkpoint::AsyncCheckpointer ckpt(dir, nullptr);
  ckpt.save(1, state_of(r));
  ckpt.wait();
  ckpt.save(2, state_of(r));
  {
    autograd::NoGradGuard no_grad;
    add_(r.model->named_parameters().front().second, 1.0);  // not through the optimizer, no before_update()
  }
  const std::string err = error_of([&] { ckpt.wait(); });
  EXPECT_NE(err.find("was written while the asynchronous save read it"), std::string::npos) << err;
  EXPECT_NE(err.find("model/" + r.model->named_parameters().front().first), std::string::npos) << err;
  EXPECT_NE(err.find("the latest checkpoint is still the previous one"), std::string::npos) << err;
  EXPECT_EQ(checkpoint::resolve_checkpoint(dir), dir + "/checkpoint-000000001");
  EXPECT_NO_THROW(checkpoint::verify_checkpoint(dir + "/checkpoint-000000001"));
  // The checkpointer goes on: the next save commits, and removes what the failed one left.
  ckpt.save(3, state_of(r));
  EXPECT_EQ(ckpt.wait(), dir + "/checkpoint-000000003");
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().rfind(".pending", 0), std::string::npos) << e.path();
  fs::remove_all(dir);
}

TEST(AsyncCheckpoint, MemoryStaysFlatOverManySaves) {
  const std::string dir = temp_dir("async_flat");
  TrainRun r = make_run(1, 1);
  manual_seed(100);
  const Tensor x = randn({4, 1, 28, 28}), y = tensor(std::vector<int64_t>{1, 2, 3, 4});
  checkpoint::AsyncCheckpointer ckpt(dir, nullptr, {.keep_last = 2});
  int64_t after_first = 0;
  for (int step = 1; step <= 100; ++step) {
    train_step(r, x, y);
    ckpt.save(step, state_of(r));
    if (step == 10) after_first = memory_stats().current_bytes;
  }
  ckpt.wait();
  EXPECT_LE(memory_stats().current_bytes, after_first) << "tensor memory grew over 90 saves";
  EXPECT_EQ(ckpt.stats().committed, 100);
  int dirs = 0;
  for (const auto& e : fs::directory_iterator(dir)) dirs += e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_EQ(dirs, 2);
  fs::remove_all(dir);
}

TEST(AsyncCheckpoint, AFailedWriteFailsTheSaveAndKeepsThePrevious) {
  const std::string dir = temp_dir("async_fail");
  TrainRun r = make_run(1, 1);
  checkpoint::AsyncCheckpointer ckpt(dir, nullptr);
  ckpt.save(1, state_of(r));
  ckpt.wait();
  // A file where the next pending directory must go: the writer cannot create it.
  std::ofstream(dir + "/.pending-checkpoint-000000002") << "in the way";
  ckpt.save(2, state_of(r));
  const std::string err = error_of([&] { ckpt.wait(); });
  EXPECT_NE(err.find("failed on rank 0"), std::string::npos) << err;
  EXPECT_NE(err.find(".pending-checkpoint-000000002"), std::string::npos) << err;
  EXPECT_EQ(checkpoint::resolve_checkpoint(dir), dir + "/checkpoint-000000001");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strider
