// The checkpoint library in one process: a full round trip of every piece of training state,
// the run directory's commit and retention, and the errors for corrupted, missing or
// mismatched files (all or nothing: a failed load changes nothing).
#include <gtest/gtest.h>
#include <strider/io/crc32c.h>
#include <strider/io/safetensors_writer.h>
#include <strider/strider.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

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
  // Indices into the files list are bounded by its size (a bound of size() - 1 wrapped for an
  // empty list and let any index through), and the list has one file per rank.
  EXPECT_EQ(with([](auto& b) { b.tensors["model/w"].shards[0].file = 3; }),
            "[checkpoint manifest] m: tensor 'model/w'.shards[0].file is 3 but the manifest's files list holds 1 "
            "(indices 0 to 0); a shard names one of the checkpoint's files by its index");
  EXPECT_EQ(with([](auto& b) { b.files.clear(); }),
            "[checkpoint manifest] m: the files list holds 0 files but world_size is 1; a checkpoint has one file per "
            "rank of the world that saved it");
  EXPECT_NE(with([](auto& b) { b.world_size = 2; }).find("the files list holds 1 files but world_size is 2"),
            std::string::npos);
  EXPECT_NE(with([](auto& b) { b.step = (int64_t{1} << 62) + 1; }).find("step is 4611686018427387905, above its limit 4611686018427387904"),
            std::string::npos);
  EXPECT_NE(with([](auto& b) { b.data = checkpoint::DataPosition{INT64_MAX, 0, 1}; }).find("data.epoch is 9223372036854775807"),
            std::string::npos);
  // A header the reader would have to allocate beyond the safetensors format's limit.
  const std::string big_header = with([](auto& b) {
    b.files[0].bytes = uint64_t{1} << 30;
    b.files[0].block_bytes = uint64_t{1} << 20;
    b.files[0].blocks.assign(1024, 0);
    b.files[0].header_bytes = 8 + (uint64_t{100} << 20) + 1;
  });
  EXPECT_NE(big_header.find("files[0].header_bytes 104857609 exceeds the safetensors format's 100 MiB header limit"),
            std::string::npos) << big_header;
  EXPECT_NE(with([](auto& b) { b.files[0].name = "../x"; }).find("not a plain file name"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.files[0].blocks.push_back(1); }).find("blocks"), std::string::npos);
  const std::string huge = with([](auto& b) { b.tensors["model/w"].shape = {int64_t{1} << 62, 1 << 20}; });
  EXPECT_NE(huge.find("tensor 'model/w'"), std::string::npos) << huge;
  EXPECT_NE(huge.find("more elements than fit"), std::string::npos) << huge;
  EXPECT_EQ(huge.find("[checkpoint manifest]", 1), std::string::npos) << huge;  // the tag once, not twice
  EXPECT_NE(error_of([&] { checkpoint::parse_manifest("{}", "m"); }).find("truncated"), std::string::npos);
  // A key given twice (a plain parse keeps the last silently), re-sealed so only the parse stands
  // between the edit and a load; at the top and inside a tensor.
  auto resealed = [](std::string text) {
    const std::string field = "\"~checksum\": \"";
    const size_t digits = text.rfind(field) + field.size();
    text.replace(digits, 8, "00000000");
    const std::string body = text.substr(0, text.size() - 1);  // the checksum leaves out the final newline
    text.replace(digits, 8, io::crc32c_hex(io::crc32c(0, body.data(), body.size())));
    return text;
  };
  std::string twice = good;
  twice.insert(twice.find("\n \"step\": "), "\n \"step\": 7,");
  EXPECT_EQ(error_of([&] { checkpoint::parse_manifest(resealed(twice), "m"); }),
            "[checkpoint manifest] m: the key 'step' appears twice in the manifest; a manifest strider writes has each "
            "key once, so it was edited. Use another checkpoint");
  twice = good;
  twice.insert(twice.find("\"dtype\": \"float32\""), "\"dtype\": \"float64\", ");
  EXPECT_NE(error_of([&] { checkpoint::parse_manifest(resealed(twice), "m"); })
                .find("the key 'dtype' appears twice in tensors.model/w"),
            std::string::npos);
}


// Re-seals DIR's manifest after `edit`: its checksum matches, so only the structural checks and
// the comparison with the files' own headers stand between the edit and a load.
void reseal_manifest(const std::string& dir, const std::function<void(checkpoint::Manifest&)>& edit) {
  checkpoint::Manifest m = checkpoint::read_manifest(dir);
  edit(m);
  std::ofstream(dir + "/manifest.json", std::ios::trunc | std::ios::binary) << checkpoint::format_manifest(m);
}

// Every reader of a checkpoint, each returning its error ("no error" if it succeeds).
std::map<std::string, std::string> errors_of_every_tool(const std::string& ckpt, const std::string& scratch) {
  TrainRun b = make_run(2, 1);
  return {
      {"load", error_of([&] { checkpoint::load(ckpt, state_of(b), nullptr); })},
      {"verify", error_of([&] { checkpoint::verify_checkpoint(ckpt); })},
      {"inspect", error_of([&] {
         checkpoint::verify_file_headers(ckpt, checkpoint::read_manifest(checkpoint::resolve_checkpoint(ckpt)));
       })},
      {"reshard", error_of([&] { checkpoint::reshard_checkpoint(ckpt, scratch + "/resharded", {.world_size = 2, .strategy = "ddp"}); })},
      {"consolidate", error_of([&] { checkpoint::consolidate_checkpoint(ckpt, scratch + "/model.safetensors"); })},
  };
}

TEST(Checkpoint, AnEmptyFilesListIsNamedByEveryTool) {
  const std::string root = temp_dir("empty_files");
  TrainRun a = make_run(1, 1);
  const std::string saved = checkpoint::Checkpointer(root + "/run", nullptr).save(1, state_of(a));
  reseal_manifest(saved, [](checkpoint::Manifest& m) { m.files.clear(); });
  for (const auto& [tool, e] : errors_of_every_tool(saved, root))
    EXPECT_NE(e.find(saved + "/manifest.json: the files list holds 0 files but world_size is 1"), std::string::npos)
        << tool << ": " << e;
  EXPECT_FALSE(fs::exists(root + "/resharded"));
  EXPECT_FALSE(fs::exists(root + "/model.safetensors"));
  fs::remove_all(root);
}

// A parameter steps only when the optimizer does: a re-sealed manifest that gives one more steps
// than the optimizer is refused by every reader, naming the field.
TEST(Checkpoint, AParameterWithMoreStepsThanItsOptimizerIsRefused) {
  const std::string root = temp_dir("param_steps");
  TrainRun a = make_run(1, 1);
  const std::string saved = checkpoint::Checkpointer(root + "/run", nullptr).save(1, state_of(a));
  const std::string name = a.model->named_parameters().front().first;
  reseal_manifest(saved, [&](checkpoint::Manifest& m) {
    ASSERT_FALSE(m.optimizer.empty());
    m.optimizer_param_steps[name] = m.optimizer_steps + 1;
  });
  for (const auto& [tool, e] : errors_of_every_tool(saved, root))
    EXPECT_NE(e.find("optimizer.param_steps." + name + " is 2, above its limit 1"), std::string::npos) << tool << ": " << e;
  fs::remove_all(root);
}

TEST(Checkpoint, AFileThatIsNotARegularFileOrTooLargeIsRefusedBeforeReading) {
  const std::string root = temp_dir("manifest_kind");
  TrainRun a = make_run(1, 1);
  const std::string saved = checkpoint::Checkpointer(root + "/run", nullptr).save(1, state_of(a));
  const std::string manifest = saved + "/manifest.json";
  fs::rename(manifest, manifest + ".good");
  // A FIFO nobody writes: opening it for reading would wait for a writer forever.
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0644), 0);
  for (const auto& [tool, e] : errors_of_every_tool(saved, root))
    EXPECT_NE(e.find("[checkpoint manifest] " + manifest + " is a FIFO, not a regular file"), std::string::npos)
        << tool << ": " << e;
  fs::remove(manifest);
  fs::create_symlink("/dev/zero", manifest);  // never ends
  EXPECT_NE(error_of([&] { checkpoint::read_manifest(saved); }).find(manifest + " is a character device, not a regular file"),
            std::string::npos);
  fs::remove(manifest);
  fs::copy_file(manifest + ".good", manifest);
  fs::resize_file(manifest, checkpoint::kMaxManifestBytes + 1);  // sparse: costs no disk
  for (const auto& [tool, e] : errors_of_every_tool(saved, root))
    EXPECT_NE(e.find(manifest + " has 268435457 bytes, above the 256 MiB a manifest may have"), std::string::npos)
        << tool << ": " << e;
  fs::remove(manifest);
  fs::rename(manifest + ".good", manifest);
  checkpoint::read_manifest(saved);
  // A rank file replaced by a FIFO is named too (its open used to wait for a writer).
  const std::string rank_file = saved + "/rank-00000-of-00001.safetensors";
  fs::rename(rank_file, rank_file + ".good");
  ASSERT_EQ(::mkfifo(rank_file.c_str(), 0644), 0);
  for (const auto& [tool, e] : errors_of_every_tool(saved, root))
    EXPECT_NE(e.find("[checkpoint] " + rank_file + " is not a regular file (it is a FIFO)"), std::string::npos)
        << tool << ": " << e;
  fs::remove(rank_file);
  fs::rename(rank_file + ".good", rank_file);
  checkpoint::verify_checkpoint(saved);
  fs::remove_all(root);
}

TEST(Checkpoint, ATensorPointedAtOtherBytesOfItsSizeIsNamed) {
  const std::string root = temp_dir("pointed");
  TrainRun a = make_run(1, 2);
  const std::string saved = checkpoint::Checkpointer(root + "/run", nullptr).save(2, state_of(a));
  // AdamW's two moments of a parameter: same dtype and shape, so the same number of bytes, in
  // the same file and checksummed.
  const checkpoint::Manifest m = checkpoint::read_manifest(saved);
  std::string first, other;
  for (const auto& [key, t] : m.tensors)
    if (key.size() > 8 && key.substr(key.size() - 8) == "/exp_avg" && m.tensors.count(key + "_sq")) {
      first = key;
      other = key + "_sq";
    }
  ASSERT_FALSE(first.empty());
  const uint64_t at = m.tensors.at(other).shards[0].offset, was = m.tensors.at(first).shards[0].offset;
  reseal_manifest(saved, [&](checkpoint::Manifest& e) { e.tensors.at(first).shards[0].offset = at; });
  TrainRun b = make_run(2, 1);
  const auto before = b.model->state_dict();
  const std::string want = "[checkpoint] " + saved + "/rank-00000-of-00001.safetensors: the manifest places tensor '" +
                           first + "' at byte " + std::to_string(at) + " but the file's header puts it at byte " +
                           std::to_string(was) + " (byte " + std::to_string(at) + " starts tensor '" + other +
                           "'); the manifest does not describe this file";
  for (const auto& [tool, e] : errors_of_every_tool(saved, root))
    EXPECT_NE(e.find(want), std::string::npos) << tool << ": " << e;
  for (auto& [name, t] : b.model->state_dict()) EXPECT_TRUE(testing::all_close(t, before.at(name), 0, 0)) << name;
  // Put back, it verifies again.
  reseal_manifest(saved, [&](checkpoint::Manifest& e) { e.tensors.at(first).shards[0].offset = was; });
  checkpoint::verify_checkpoint(saved);
  fs::remove_all(root);
}

// Rewrites every rank file of DIR without the row metadata (as strider wrote them before it was
// recorded), the pieces in their order, and re-seals the manifest with the new sizes, checksums
// and offsets.
void strip_row_metadata(const std::string& dir) {
  reseal_manifest(dir, [&](checkpoint::Manifest& m) {
    for (size_t f = 0; f < m.files.size(); ++f) {
      checkpoint::FileRecord& rec = m.files[f];
      std::vector<std::pair<uint64_t, checkpoint::ShardRecord*>> in_file;
      std::map<checkpoint::ShardRecord*, std::string> key_of;
      for (auto& [key, t] : m.tensors)
        for (auto& s : t.shards)
          if (s.file == static_cast<int64_t>(f)) {
            in_file.push_back({s.offset, &s});
            key_of[&s] = key;
          }
      std::sort(in_file.begin(), in_file.end());
      const std::string path = dir + "/" + rec.name;
      const io::SafetensorsFile old = io::load_safetensors(path);
      ASSERT_EQ(old.tensors.size(), in_file.size());
      std::vector<io::SafetensorsEntry> entries;
      for (auto& [off, s] : in_file) {
        const Tensor& t = old.tensors.at(key_of[s]);
        entries.push_back({key_of[s], t.dtype(), t.sizes().vec()});
      }
      io::SafetensorsWriter w(path, entries, {{"format", "strider.checkpoint.shard"}},
                              {.whole_file_checksum = false, .block_bytes = rec.block_bytes});
      for (auto& [off, s] : in_file) w.write(old.tensors.at(key_of[s]));
      const io::WrittenSafetensors done = w.finish();
      rec.bytes = done.bytes;
      rec.header_bytes = done.header_bytes;
      rec.blocks = done.block_crc32c;
      for (size_t i = 0; i < in_file.size(); ++i) in_file[i].second->offset = done.offsets[i];
    }
  });
}

TEST(Checkpoint, RowsSwappedBetweenTwoRankFilesAreNamed) {
  const std::string root = temp_dir("swapped_rows");
  TrainRun a = make_run(1, 2);
  checkpoint::Checkpointer(root + "/run", nullptr).save(2, state_of(a));
  // Two rank files, as two FULL_SHARD ranks write them: each holds half the rows of each parameter.
  const std::string two = root + "/two";
  checkpoint::reshard_checkpoint(root + "/run", two, {.world_size = 2, .strategy = "full_shard"});
  const checkpoint::Manifest m = checkpoint::read_manifest(two);
  std::string key;  // a tensor whose two halves have the same shape: only their rows differ
  for (const auto& [k, t] : m.tensors)
    if (t.shards.size() == 2 && t.shards[0].row_end * 2 == t.rows() && key.empty()) key = k;
  ASSERT_FALSE(key.empty());
  const int64_t half = m.tensors.at(key).rows() / 2;
  // Each shard keeps its rows but is sent to the other file, at the offset of that file's half:
  // names, dtypes, shapes and offsets all agree with the headers.
  auto swap_files = [&](checkpoint::Manifest& e) {
    auto& s = e.tensors.at(key).shards;
    std::swap(s[0].file, s[1].file);
    std::swap(s[0].offset, s[1].offset);
  };
  reseal_manifest(two, swap_files);
  const std::string rows_of_0 = "rows [0, " + std::to_string(half) + ")";
  const std::string rows_of_1 = "rows [" + std::to_string(half) + ", " + std::to_string(2 * half) + ")";
  for (const auto& [tool, e] : errors_of_every_tool(two, root)) {
    // Whichever file a tool opens first names the swap from its side.
    const bool file0 = e.find(two + "/rank-00000-of-00002.safetensors: the file holds " + rows_of_0 + " of tensor '" +
                              key + "' but the manifest reads them as its " + rows_of_1) != std::string::npos;
    const bool file1 = e.find(two + "/rank-00001-of-00002.safetensors: the file holds " + rows_of_1 + " of tensor '" +
                              key + "' but the manifest reads them as its " + rows_of_0) != std::string::npos;
    EXPECT_TRUE(file0 || file1) << tool << ": " << e;
  }
  reseal_manifest(two, swap_files);  // back
  TrainRun b = make_run(2, 1);
  checkpoint::load(two, state_of(b), nullptr);
  testing::expect_same_state(a, b);
  // Files written before the rows were recorded still load (the other checks still apply).
  strip_row_metadata(two);
  EXPECT_EQ(io::load_safetensors(two + "/rank-00001-of-00002.safetensors").metadata.size(), 1u);
  TrainRun c = make_run(3, 1);
  checkpoint::load(two, state_of(c), nullptr);
  testing::expect_same_state(a, c);
  checkpoint::verify_checkpoint(two);
  fs::remove_all(root);
}
// A composed schedule resumes where it was (checkpoints keep its step; set_last_step restores
// the members and the recursive lrs), and an optimizer whose model became float64 after it was
// built saves float64 state that a float64 run loads.
TEST(Checkpoint, ComposedSchedulesAndAConvertedModelResume) {
  const std::string dir = temp_dir("schedules");
  auto run = [](nn::Linear& lin, optim::Optimizer& opt, optim::LRScheduler& sched, int steps) {
    const Tensor x = ones({4, 3}, kDouble);
    std::vector<std::vector<double>> lrs;
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      Tensor y = lin(x);
      (y * y).sum().backward();
      opt.step();
      sched.step();
      lrs.push_back(sched.get_last_lr());
    }
    return lrs;
  };
  auto groups = [](nn::Linear& lin) {  // two groups with different base lrs
    return std::vector<optim::ParamGroup>{{.params = {{"weight", lin.param("weight")}}},
                                          {.params = {{"bias", lin.param("bias")}}, .options = {.lr = 0.003}}};
  };
  manual_seed(5);
  auto a = std::make_shared<nn::Linear>(3, 2);
  optim::AdamW opt_a(groups(*a), {.lr = 0.01});
  optim::LinearLR warm_a(opt_a, {.start_factor = 0.1, .total_iters = 4});
  optim::CosineAnnealingLR cos_a(opt_a, 9, 1e-4);
  optim::SequentialLR sched_a(opt_a, {&warm_a, &cos_a}, {4});
  a->to(kDouble);  // after building the optimizer: its state follows at the first step
  run(*a, opt_a, sched_a, 13);
  checkpoint::Checkpointer(dir, nullptr).save(13, {.model = a.get(), .optimizer = &opt_a, .scheduler = &sched_a});
  const auto after_a = run(*a, opt_a, sched_a, 12);

  manual_seed(6);
  auto b = std::make_shared<nn::Linear>(3, 2);
  b->to(kDouble);
  optim::AdamW opt_b(groups(*b), {.lr = 0.01});
  optim::LinearLR warm_b(opt_b, {.start_factor = 0.1, .total_iters = 4});
  optim::CosineAnnealingLR cos_b(opt_b, 9, 1e-4);
  optim::SequentialLR sched_b(opt_b, {&warm_b, &cos_b}, {4});
  checkpoint::load(dir, {.model = b.get(), .optimizer = &opt_b, .scheduler = &sched_b}, nullptr);
  EXPECT_EQ(sched_b.last_step(), 13);
  EXPECT_EQ(run(*b, opt_b, sched_b, 12), after_a) << "the lrs after resuming, bit for bit";
  EXPECT_TRUE(equal(a->param("weight"), b->param("weight")));
  fs::remove_all(dir);
}

// A manifest listing a rank whose file is missing: every reader refuses it before reading
// anything, including those that need none of that file's bytes (a load, reshard or export
// used to succeed from the files that were there).
TEST(Checkpoint, AListedFileThatIsMissingFailsEveryReader) {
  const std::string root = temp_dir("more_ranks");
  TrainRun a = make_run(1, 2);
  checkpoint::Checkpointer(root + "/run", nullptr).save(2, state_of(a));
  const std::string two = root + "/two";
  checkpoint::reshard_checkpoint(root + "/run", two, {.world_size = 2, .strategy = "full_shard"});
  // A third rank listed, its file never written: the tensors' shards stay in the first two.
  reseal_manifest(two, [](checkpoint::Manifest& m) {
    m.world_size = 3;
    checkpoint::FileRecord extra = m.files.back();
    extra.name = "rank-00002-of-00003.safetensors";
    m.files.push_back(extra);
    if (!m.rng.empty()) m.rng.push_back(m.rng.back());
  });
  const std::string missing = two + "/rank-00002-of-00003.safetensors";
  for (const auto& [tool, e] : errors_of_every_tool(two, root))
    EXPECT_NE(e.find("cannot open " + missing + " listed in the manifest"), std::string::npos) << tool << ": " << e;
  EXPECT_FALSE(fs::exists(root + "/resharded"));
  EXPECT_FALSE(fs::exists(root + "/model.safetensors"));
  fs::remove_all(root);
}

// "local" is one process's save: a manifest claiming it for two ranks (or units saved under
// another strategy than the checkpoint's) was edited, and every reader says so.
TEST(Checkpoint, AStrategyThatDisagreesWithTheWorldSizeIsRefused) {
  const std::string root = temp_dir("strategy_local");
  TrainRun a = make_run(1, 2);
  checkpoint::Checkpointer(root + "/run", nullptr).save(2, state_of(a));
  const std::string two = root + "/two";
  checkpoint::reshard_checkpoint(root + "/run", two, {.world_size = 2, .strategy = "ddp"});
  reseal_manifest(two, [](checkpoint::Manifest& m) {
    m.strategy = "local";
    for (auto& u : m.units) u.strategy = "local";
  });
  for (const auto& [tool, e] : errors_of_every_tool(two, root))
    EXPECT_NE(e.find("strategy 'local' (one process, no wrapper) is saved by one rank but world_size is 2"),
              std::string::npos) << tool << ": " << e;
  const std::string units = root + "/units";
  checkpoint::reshard_checkpoint(root + "/run", units, {.world_size = 2, .strategy = "full_shard"});
  reseal_manifest(units, [](checkpoint::Manifest& m) { m.units.front().strategy = "no_shard"; });
  for (const auto& [tool, e] : errors_of_every_tool(units, root))
    EXPECT_NE(e.find("is saved as no_shard but the checkpoint as full_shard"), std::string::npos) << tool << ": " << e;
  EXPECT_FALSE(fs::exists(root + "/resharded"));
  EXPECT_FALSE(fs::exists(root + "/model.safetensors"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace strider
