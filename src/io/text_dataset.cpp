#include "strider/io/text_dataset.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "strider/ops/factory.h"

namespace strider::io {

TextDataset load_text_file(const std::string& path) {
  std::error_code ec;
  STRIDER_CHECK(std::filesystem::is_regular_file(path, ec), "load_text_file", "'", path, "' is ",
                std::filesystem::exists(path, ec) ? "not a regular file (a directory or device?)" : "missing",
                "; pass an existing text file");
  std::ifstream in(path, std::ios::binary);
  STRIDER_CHECK(in.good(), "load_text_file", "cannot open '", path, "'; pass an existing text file");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  STRIDER_CHECK(!in.bad(), "load_text_file", "reading '", path, "' failed");
  STRIDER_CHECK(!bytes.empty(), "load_text_file", "'", path, "' is empty; a language model needs text to train on");
  Tensor tokens = empty({static_cast<int64_t>(bytes.size())}, kLong);
  int64_t* t = tokens.data_ptr<int64_t>();
  for (size_t i = 0; i < bytes.size(); ++i) t[i] = bytes[i];
  return {tokens};
}

TextSplit split_text(const TextDataset& data, double val_fraction) {
  STRIDER_CHECK(val_fraction > 0 && val_fraction < 1, "split_text", "val_fraction must be in (0, 1), got ",
                val_fraction);
  const int64_t n = data.size();
  const int64_t n_val = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * val_fraction));
  return {{data.tokens.narrow(0, 0, n - n_val)}, {data.tokens.narrow(0, n - n_val, n_val)}};
}

namespace {
int64_t count_windows(int64_t tokens, int64_t seq_len) { return tokens > seq_len ? (tokens - 1) / seq_len : 0; }

// Checked before any member uses them (the window count divides by seq_len).
const TextLoaderOptions& checked(const TextLoaderOptions& o) {
  STRIDER_CHECK(o.batch_size > 0 && o.seq_len > 0, "TextLoader", "batch_size and seq_len must be positive, got ",
                o.batch_size, " and ", o.seq_len);
  return o;
}
}  // namespace

TextLoader::TextLoader(TextDataset data, TextLoaderOptions o)
    : data_(std::move(data)), o_(checked(o)), windows_(count_windows(data_.size(), o.seq_len)),
      sampler_(windows_, o.num_replicas, o.rank, o.shuffle, o.seed, o.drop_last) {
  STRIDER_CHECK(windows_ >= o.num_replicas, "TextLoader", o.name, " has ", data_.size(), " bytes: fewer than ",
                o.num_replicas, " windows of ", o.seq_len + 1, " bytes; use a longer text or a shorter --seq");
  data_.tokens = data_.tokens.contiguous();
}

int64_t TextLoader::batches_per_epoch() const {
  const int64_t n = sampler_.num_samples();
  return o_.drop_last ? n / o_.batch_size : (n + o_.batch_size - 1) / o_.batch_size;
}

void TextLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  STRIDER_CHECK(first_batch >= 0 && first_batch <= batches_per_epoch(), "TextLoader::start_epoch", "first batch ",
                first_batch, " is outside the epoch's ", batches_per_epoch(), " batches");
  order_ = sampler_.indices(epoch);
  cursor_ = first_batch;
}

std::optional<Batch> TextLoader::next() {
  if (cursor_ >= batches_per_epoch()) return std::nullopt;
  const int64_t begin = cursor_ * o_.batch_size;
  const int64_t end = std::min<int64_t>(begin + o_.batch_size, static_cast<int64_t>(order_.size()));
  ++cursor_;
  const int64_t b = end - begin, t = o_.seq_len;
  Tensor input = empty({b, t}, kLong), target = empty({b, t}, kLong);
  const int64_t* src = data_.tokens.data_ptr<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    const int64_t start = order_[static_cast<size_t>(begin + i)] * t;
    std::memcpy(input.data_ptr<int64_t>() + i * t, src + start, static_cast<size_t>(t) * sizeof(int64_t));
    std::memcpy(target.data_ptr<int64_t>() + i * t, src + start + 1, static_cast<size_t>(t) * sizeof(int64_t));
  }
  return Batch{input, target};
}

}  // namespace strider::io
