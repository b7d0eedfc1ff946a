// The offline tools' library half: resharding rewrites a checkpoint for another world size and
// strategy with every tensor bitwise and the layout that world size would have written;
// consolidation gives the model's whole tensors under its own names, which load into a fresh
// model that then computes the same outputs; bad requests and corrupted sources are clear
// errors that leave nothing behind.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <fstream>

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

void flip_byte(const std::string& path, uint64_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

TEST(CheckpointReshardOffline, EveryTensorBitwiseInTheTargetLayout) {
  const std::string root = temp_dir("offline_reshard");
  TrainRun a = make_run(1, 3);
  const std::string src = checkpoint::Checkpointer(root + "/run", nullptr).save(3, state_of(a));
  const std::set<std::string> params = [&] {
    std::set<std::string> out;
    for (auto& [name, p] : a.model->named_parameters()) out.insert(checkpoint::model_key(name));
    return out;
  }();
  int n = 0;
  for (int64_t world : {1, 2, 3, 5})
    for (std::string strategy : {"full_shard", "ddp", "hybrid_shard", "local"}) {
      if (strategy == "local" && world != 1) continue;
      SCOPED_TRACE(strategy + " at " + std::to_string(world));
      const std::string out = root + "/out" + std::to_string(n++);
      const auto report = checkpoint::reshard_checkpoint(src, out, {.world_size = world, .strategy = strategy});
      const checkpoint::VerifyReport v = checkpoint::verify_checkpoint(out);  // every byte
      EXPECT_EQ(v.bytes, report.bytes);
      const checkpoint::Manifest& m = v.manifest;
      EXPECT_EQ(m.world_size, world);
      EXPECT_EQ(m.strategy, strategy);
      EXPECT_EQ(m.files.size(), static_cast<size_t>(world));
      EXPECT_EQ(m.rng.size(), static_cast<size_t>(world));
      EXPECT_EQ(m.step, 3);
      for (auto& [key, t] : m.tensors) {
        // Parameters, and optimizer moments of a parameter's shape ("optim/<param>/<key>").
        const std::string param = key.rfind("optim/", 0) == 0 ? "model/" + key.substr(6, key.rfind('/') - 6) : key;
        const bool split = params.count(param) && IntArrayRef(m.tensors.at(param).shape) == IntArrayRef(t.shape);
        if (!split || t.rows() < world) continue;
        // Rank r's file holds rows [r * ceil(rows / M), ...): what rank r of that run holds.
        ASSERT_EQ(t.shards.size(), static_cast<size_t>(world)) << key;
        const int64_t chunk = (t.rows() + world - 1) / world;
        for (size_t r = 0; r < t.shards.size(); ++r) {
          EXPECT_EQ(t.shards[r].file, static_cast<int64_t>(r)) << key;
          EXPECT_EQ(t.shards[r].row_begin, std::min(t.rows(), chunk * static_cast<int64_t>(r))) << key;
        }
      }
      for (auto& [name, b] : a.model->named_buffers()) {
        const auto& t = m.tensors.at(checkpoint::model_key(name));
        ASSERT_EQ(t.shards.size(), 1u) << name;  // buffers: whole, in rank 0's file
        EXPECT_EQ(t.shards[0].file, 0) << name;
      }
      TrainRun b = make_run(2, 1);
      checkpoint::load(out, state_of(b), nullptr);
      testing::expect_same_state(a, b);
    }
  // A resharded checkpoint reshards again.
  const std::string twice = root + "/twice";
  checkpoint::reshard_checkpoint(root + "/out5", twice, {.world_size = 2, .strategy = ""});
  TrainRun c = make_run(3, 1);
  checkpoint::load(twice, state_of(c), nullptr);
  testing::expect_same_state(a, c);
  fs::remove_all(root);
}

TEST(CheckpointConsolidate, WholeTensorsUnderTheModelsNamesComputeTheSameOutputs) {
  const std::string root = temp_dir("consolidate");
  TrainRun a = make_run(1, 3);
  checkpoint::Checkpointer(root + "/run", nullptr).save(3, state_of(a));
  const std::string sharded = root + "/sharded";  // consolidating from 3 rank files
  checkpoint::reshard_checkpoint(root + "/run", sharded, {.world_size = 3, .strategy = "full_shard"});
  const std::string file = root + "/model.safetensors";
  const auto report = checkpoint::consolidate_checkpoint(sharded, file);
  EXPECT_EQ(report.step, 3);
  const io::SafetensorsFile st = io::load_safetensors(file, {.require_checksum = true});
  const auto want = a.model->state_dict();
  EXPECT_EQ(st.tensors.size(), want.size());
  EXPECT_EQ(report.tensors, static_cast<int64_t>(want.size()));
  for (auto& [name, t] : want) {
    ASSERT_TRUE(st.tensors.count(name)) << name;
    EXPECT_TRUE(testing::all_close(st.tensors.at(name), t, 0, 0)) << name;
  }
  EXPECT_EQ(st.metadata.at("format"), "pt");  // Hugging Face's loaders require it
  EXPECT_EQ(st.metadata.at("strider.format"), "strider.consolidated");
  manual_seed(9);
  auto fresh = models::small_cnn(10, 1);
  fresh->load_state_dict(st.tensors);
  fresh->eval();
  a.model->eval();
  const Tensor x = randn({3, 1, 28, 28});
  EXPECT_TRUE(testing::all_close((*fresh)(x), (*a.model)(x), 0, 0));
  fs::remove_all(root);
}

TEST(CheckpointOfflineTools, BadRequestsAndCorruptSourcesLeaveNothing) {
  const std::string root = temp_dir("offline_errors");
  TrainRun a = make_run(1, 1);
  const std::string src = checkpoint::Checkpointer(root + "/run", nullptr).save(1, state_of(a));
  auto reshard = [&](const std::string& out, int64_t world, const std::string& strategy) {
    return error_of([&] { checkpoint::reshard_checkpoint(src, out, {.world_size = world, .strategy = strategy}); });
  };
  fs::create_directories(root + "/taken");
  EXPECT_NE(reshard(root + "/taken", 2, "full_shard").find("already exists"), std::string::npos);
  EXPECT_NE(reshard(root + "/x", 0, "").find("--world-size 0 is outside"), std::string::npos);
  EXPECT_NE(reshard(root + "/x", 2, "local").find("needs --world-size 1"), std::string::npos);
  EXPECT_NE(reshard(root + "/x", 2, "zero3").find("unknown strategy 'zero3'"), std::string::npos);
  EXPECT_NE(reshard(root + "/missing/x", 2, "ddp").find("does not exist"), std::string::npos);
  EXPECT_NE(error_of([&] { checkpoint::reshard_checkpoint(root + "/nothing", root + "/x", {.world_size = 2, .strategy = ""}); })
                .find("nothing"),
            std::string::npos);

  const checkpoint::Manifest m = checkpoint::read_manifest(src);
  const checkpoint::ShardRecord& first = m.tensors.begin()->second.shards.at(0);  // a model tensor
  ASSERT_EQ(m.tensors.begin()->first.rfind("model/", 0), 0u);
  flip_byte(src + "/" + m.files[first.file].name, first.offset + 1);
  const std::string err = reshard(root + "/x", 2, "full_shard");
  EXPECT_NE(err.find(m.files[first.file].name), std::string::npos) << err;
  EXPECT_NE(err.find("fail their checksum"), std::string::npos) << err;
  const std::string cerr = error_of([&] { checkpoint::consolidate_checkpoint(src, root + "/model.safetensors"); });
  EXPECT_NE(cerr.find("fail their checksum"), std::string::npos) << cerr;
  // Nothing half-written survives: no output, no pending directory, no temporary.
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator(root)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"run", "taken"}));
  fs::remove_all(root);
}

}  // namespace
}  // namespace strider
