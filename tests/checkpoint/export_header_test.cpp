// A whole-model export (save_full, consolidate_checkpoint) is a safetensors file Hugging Face's
// loaders accept: its header's "__metadata__" says "format": "pt" (transformers refuses any
// other), every metadata value is a string, and strider's own fields are kept beside it.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint/train_run.h"

namespace strider {
namespace {

using testing::make_run;
using testing::state_of;
using testing::temp_dir;
using testing::TrainRun;

// The JSON header as any safetensors reader sees it: an 8-byte little-endian length, then JSON.
nlohmann::json header_of(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char len[8] = {};
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  std::string json(n, '\0');
  in.read(json.data(), static_cast<std::streamsize>(n));
  return nlohmann::json::parse(json);
}

void expect_hugging_face_header(const std::string& file, int64_t step, const std::string& saved_as) {
  SCOPED_TRACE(file);
  const nlohmann::json h = header_of(file);
  ASSERT_TRUE(h.contains("__metadata__"));
  const nlohmann::json& meta = h["__metadata__"];
  ASSERT_TRUE(meta.is_object());
  for (const auto& [key, value] : meta.items()) EXPECT_TRUE(value.is_string()) << key;
  EXPECT_EQ(meta.value("format", ""), "pt");
  EXPECT_EQ(meta.value("strider.format", ""), "strider.consolidated");
  EXPECT_EQ(meta.value("step", ""), std::to_string(step));
  EXPECT_EQ(meta.value("saved_as", ""), saved_as);
  EXPECT_TRUE(meta.contains("strider.checksum"));
  // Every other entry is a tensor, named as the model names it.
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    EXPECT_TRUE(t.contains("dtype") && t.contains("shape") && t.contains("data_offsets")) << name;
  }
}

TEST(CheckpointExport, ConsolidatedAndFullSavedFilesSayFormatPt) {
  const std::string root = temp_dir("export_header");
  TrainRun run = make_run(1, 2);
  checkpoint::Checkpointer(root + "/run", nullptr).save(2, state_of(run));
  checkpoint::consolidate_checkpoint(root + "/run", root + "/consolidated.safetensors");
  expect_hugging_face_header(root + "/consolidated.safetensors", 2, "local on 1 ranks");
  checkpoint::save_full(root + "/full.safetensors", *run.model, 2, nullptr);
  expect_hugging_face_header(root + "/full.safetensors", 2, "local on 1 ranks");
  // strider's own reader still takes them, checksum and all.
  const io::SafetensorsFile st = io::load_safetensors(root + "/full.safetensors", {.require_checksum = true});
  EXPECT_EQ(st.metadata.at("format"), "pt");
  EXPECT_EQ(st.tensors.size(), run.model->state_dict().size());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace strider
