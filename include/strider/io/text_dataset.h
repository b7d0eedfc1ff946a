#pragma once
// Byte-level language-modelling data: a file's bytes are its tokens (vocabulary 256). Examples
// are windows of seq_len + 1 bytes starting every seq_len bytes: the input is the first seq_len,
// the target each position's next byte. Batches are drawn with the same seeded, optionally
// distributed sampler as the image loader.
#include <optional>
#include <string>

#include "strider/io/data_loader.h"

namespace strider::io {

struct TextDataset {
  Tensor tokens;  // int64 [N], values 0..255
  int64_t size() const { return tokens.numel(); }
};

// Reads a file's bytes. A missing, unreadable or empty file is a strider::Error naming it.
TextDataset load_text_file(const std::string& path);

// The first (1 - val_fraction) of the tokens for training, the rest for validation.
struct TextSplit {
  TextDataset train, val;
};
TextSplit split_text(const TextDataset& data, double val_fraction);

struct TextLoaderOptions {
  int64_t batch_size = 16;
  int64_t seq_len = 64;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = true;
  int64_t num_replicas = 1, rank = 0;
  std::string name = "the text";  // what the data is, for messages ("the training split of 'x'")
};

class TextLoader {
 public:
  TextLoader(TextDataset data, TextLoaderOptions options);
  // Starts an epoch at its batch `first_batch` (a resumed run skips the batches it trained on).
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // input and target int64 [B, seq_len]; nullopt at the end of the epoch.
  std::optional<Batch> next();
  int64_t batches_per_epoch() const;
  int64_t windows() const { return windows_; }

 private:
  TextDataset data_;
  TextLoaderOptions o_;
  int64_t windows_;
  DistributedSampler sampler_;
  std::vector<int64_t> order_;
  int64_t cursor_ = 0;
};

}  // namespace strider::io
