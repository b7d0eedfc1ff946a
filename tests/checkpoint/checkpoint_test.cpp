// The checkpoint library in one process: a full round trip of every piece of training state,
// the run directory's commit and retention, and the errors for corrupted, missing or
// mismatched files (all or nothing: a failed load changes nothing).
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/train_run.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::error_of;
using testing::expect_same_state;
using testing::make_run;
using testing::state_of;
using testing::temp_dir;
using testing::TrainRun;
namespace fs = std::filesystem;
namespace F = nn::functional;

TEST(Checkpoint, RoundTripsEveryPartOfTheTrainingState) {
  const std::string dir = temp_dir("roundtrip");
  TrainRun a = make_run(1, 3);
  checkpoint::DataPosition pos{.epoch = 2, .batches_done = 7, .global_batch_size = 4};
  std::map<std::string, std::string> user{{"note", "hello"}};
  manual_seed(77);
  (void)rand({3});
  const std::string rng_before = default_generator().state();
  const std::string saved = checkpoint::Checkpointer(dir, nullptr).save(3, state_of(a, &pos, &user));
  EXPECT_EQ(saved, dir + "/checkpoint-000000003");
  const float next_draw = rand({1}).item<float>();

  TrainRun b = make_run(2, 1);  // different weights, moments and schedule position
  checkpoint::DataPosition pos_b;
  std::map<std::string, std::string> user_b;
  const auto result = checkpoint::load(dir, state_of(b, &pos_b, &user_b), nullptr);
  EXPECT_EQ(result.dir, saved);
  EXPECT_EQ(result.manifest.step, 3);
  expect_same_state(a, b);
  EXPECT_EQ(pos_b.epoch, 2);
  EXPECT_EQ(pos_b.batches_done, 7);
  EXPECT_EQ(pos_b.global_batch_size, 4);
  EXPECT_EQ(user_b.at("note"), "hello");
  EXPECT_EQ(default_generator().state(), rng_before);
  EXPECT_EQ(rand({1}).item<float>(), next_draw) << "the generator continues where it was saved";
  // The rank file is a plain safetensors file other readers can open.
  auto file = io::load_safetensors(saved + "/rank-00000-of-00001.safetensors");
  EXPECT_TRUE(file.tensors.count("model/0.weight") || !file.tensors.empty());
  fs::remove_all(dir);
}

TEST(Checkpoint, KeepsTheNewestAndCleansWhatKilledSavesLeft) {
  const std::string dir = temp_dir("retention");
  fs::create_directories(dir + "/.pending-checkpoint-000000099");
  std::ofstream(dir + "/.pending-checkpoint-000000099/rank-00000-of-00001.safetensors.tmp.12345") << "partial";
  fs::create_directories(dir + "/checkpoint-000000098");  // no manifest: a removal cut short
  TrainRun a = make_run(1, 1);
  checkpoint::Checkpointer ckpt(dir, nullptr, {.keep_last = 2});
  for (int64_t step : {1, 2, 3, 4}) ckpt.save(step, state_of(a));
  const auto all = checkpoint::committed_checkpoints(dir);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].step, 3);
  EXPECT_EQ(all[1].step, 4);
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names.size(), 2u) << "pending saves and uncommitted directories are gone";
  EXPECT_EQ(checkpoint::resolve_checkpoint(dir), all[1].dir);
  EXPECT_EQ(checkpoint::resolve_checkpoint(all[0].dir), all[0].dir);
  // Saving a step that exists (a resumed run) replaces it.
  ckpt.save(4, state_of(a));
  EXPECT_EQ(checkpoint::committed_checkpoints(dir).size(), 2u);
  EXPECT_NE(error_of([&] { checkpoint::resolve_checkpoint(dir + "/nothing"); }).find("does not exist"),
            std::string::npos);
  fs::create_directories(dir + "/empty");
  EXPECT_NE(error_of([&] { checkpoint::resolve_checkpoint(dir + "/empty"); }).find("holds no committed checkpoint"),
            std::string::npos);
  fs::remove_all(dir);
}

// Flips one byte of `path` at `offset`, returns a restorer.
struct FlippedByte {
  FlippedByte(std::string p, uint64_t offset) : path(std::move(p)), at(offset) { flip(); }
  ~FlippedByte() { flip(); }
  void flip() {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&c, 1);
  }
  std::string path;
  uint64_t at;
};

TEST(Checkpoint, AnyFlippedByteMissingFileOrTruncationIsNamed) {
  const std::string dir = temp_dir("corrupt");
  TrainRun a = make_run(1, 2);
  const std::string saved = checkpoint::Checkpointer(dir, nullptr).save(2, state_of(a));
  const std::string rank_file = saved + "/rank-00000-of-00001.safetensors";
  const std::string manifest = saved + "/manifest.json";
  const checkpoint::Manifest m = checkpoint::read_manifest(saved);
  TrainRun b = make_run(2, 1);
  const auto before = b.model->state_dict();
  const auto opt_before = b.opt->state();
  auto load = [&] { checkpoint::load(saved, state_of(b), nullptr); };
  auto unchanged = [&] {
    for (auto& [name, t] : b.model->state_dict()) EXPECT_TRUE(testing::all_close(t, before.at(name), 0, 0)) << name;
    EXPECT_EQ(b.opt->state().size(), opt_before.size());
  };
  const uint64_t size = fs::file_size(rank_file);
  const uint64_t header = m.files[0].header_bytes;
  for (uint64_t at : {uint64_t{0}, uint64_t{3}, header / 2, header - 1, header, header + (size - header) / 3,
                      size / 2, size - 1}) {
    FlippedByte flip(rank_file, at);
    const std::string e = error_of(load);
    EXPECT_NE(e.find("rank-00000-of-00001.safetensors"), std::string::npos) << at << ": " << e;
    EXPECT_NE(e.find(at < header ? std::string("the header") : std::string("tensor '")), std::string::npos)
        << at << ": " << e;
    EXPECT_NE(e.find("fail their checksum"), std::string::npos) << e;
    unchanged();
  }
  const uint64_t msize = fs::file_size(manifest);
  for (uint64_t at : {uint64_t{0}, msize / 3, msize / 2, msize - 5, msize - 2}) {
    FlippedByte flip(manifest, at);
    const std::string e = error_of(load);
    EXPECT_NE(e.find("manifest.json"), std::string::npos) << at << ": " << e;
    unchanged();
  }
  {  // a truncated manifest
    const std::string text = [&] {
      std::ifstream in(manifest);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    std::ofstream(manifest, std::ios::trunc) << text.substr(0, text.size() / 2);
    EXPECT_NE(error_of(load).find("truncated"), std::string::npos) << error_of(load);
    std::ofstream(manifest, std::ios::trunc) << text;
  }
  {  // a truncated rank file, then a missing one
    fs::copy_file(rank_file, rank_file + ".bak");
    fs::resize_file(rank_file, size - 10);
    EXPECT_NE(error_of(load).find("truncated or replaced"), std::string::npos) << error_of(load);
    fs::remove(rank_file);
    EXPECT_NE(error_of(load).find("cannot open " + rank_file), std::string::npos) << error_of(load);
    fs::rename(rank_file + ".bak", rank_file);
  }
  unchanged();
  load();  // intact again: loads
  expect_same_state(a, b);
  fs::remove_all(dir);
}

TEST(Checkpoint, AnotherModelOrOptimizerIsAClearError) {
  const std::string dir = temp_dir("mismatch");
  TrainRun a = make_run(1, 2);
  checkpoint::Checkpointer(dir, nullptr).save(2, state_of(a));
  // Another shape.
  manual_seed(3);
  auto wider = models::small_cnn(12, 1);
  const std::string e = error_of([&] { checkpoint::load(dir, {.model = wider.get()}, nullptr); });
  EXPECT_NE(e.find("in the checkpoint but"), std::string::npos) << e;
  // Another optimizer; without loading the optimizer, the model still loads.
  TrainRun b = make_run(2, 0);
  optim::SGD sgd(b.model->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  const std::string e2 = error_of([&] { checkpoint::load(dir, {.model = b.model.get(), .optimizer = &sgd}, nullptr); });
  EXPECT_NE(e2.find("holds adamw state but the optimizer is sgd"), std::string::npos) << e2;
  checkpoint::load(dir, {.model = b.model.get(), .optimizer = &sgd}, nullptr, {.optimizer = false});
  for (auto& [name, t] : a.model->state_dict())
    EXPECT_TRUE(testing::all_close(b.model->state_dict().at(name), t, 0, 0)) << name;
  EXPECT_EQ(sgd.step_count(), 0);
  fs::remove_all(dir);
}

TEST(CheckpointManifest, RejectsMalformedFields) {
  checkpoint::Manifest m;
  m.world_size = 1;
  m.strategy = "local";
  m.files.push_back({.name = "rank-00000-of-00001.safetensors", .bytes = 100, .header_bytes = 16,
                     .block_bytes = 4096, .blocks = {0}});
  m.tensors["model/w"] = {kFloat, {3, 2}, {{0, 0, 3, 16}}};
  const std::string good = format_manifest(m);
  EXPECT_EQ(checkpoint::parse_manifest(good, "m").tensors.at("model/w").shards.size(), 1u);
  // Structural errors are refused even when the checksum is recomputed to match.
  auto with = [&](auto edit) {
    checkpoint::Manifest bad = m;
    edit(bad);
    return error_of([&] { checkpoint::parse_manifest(format_manifest(bad), "m"); });
  };
  EXPECT_NE(with([](auto& b) { b.tensors["model/w"].shards[0].row_end = 2; }).find("cover rows [0, 2) of 3"),
            std::string::npos);
  EXPECT_NE(with([](auto& b) { b.tensors["model/w"].shards[0].offset = 90; }).find("outside the data"),
            std::string::npos);
  EXPECT_NE(with([](auto& b) { b.tensors["model/w"].shards[0].file = 3; }).find("above its limit"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.files[0].name = "../x"; }).find("not a plain file name"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.files[0].blocks.push_back(1); }).find("blocks"), std::string::npos);
  const std::string huge = with([](auto& b) { b.tensors["model/w"].shape = {int64_t{1} << 62, 1 << 20}; });
  EXPECT_NE(huge.find("tensor 'model/w'"), std::string::npos) << huge;
  EXPECT_NE(huge.find("more elements than fit"), std::string::npos) << huge;
  EXPECT_NE(error_of([&] { checkpoint::parse_manifest("{}", "m"); }).find("truncated"), std::string::npos);
}

}  // namespace
}  // namespace strider
