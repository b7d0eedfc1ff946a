#include "strider/io/data_loader.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/factory.h"

namespace strider::io {

DistributedSampler::DistributedSampler(int64_t size, int64_t replicas, int64_t rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : size_(size), replicas_(replicas), rank_(rank), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
  STRIDER_CHECK(replicas > 0 && rank >= 0 && rank < replicas, "DistributedSampler", "invalid rank ", rank,
                " for ", replicas, " replicas");
  num_samples_ = drop_last ? size / replicas : (size + replicas - 1) / replicas;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> all(static_cast<size_t>(size_));
  std::iota(all.begin(), all.end(), 0);
  if (shuffle_) {
    std::mt19937_64 rng(seed_ + static_cast<uint64_t>(epoch));
    std::shuffle(all.begin(), all.end(), rng);
  }
  const int64_t total = num_samples_ * replicas_;
  if (!drop_last_)
    for (int64_t i = size_; i < total; ++i) all.push_back(all[static_cast<size_t>(i - size_)]);  // pad by wrapping
  all.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  for (int64_t i = rank_; i < total; i += replicas_) mine.push_back(all[static_cast<size_t>(i)]);
  return mine;
}

DataLoader::DataLoader(ImageDataset data, DataLoaderOptions o)
    : data_(std::move(data)), o_(o),
      sampler_(data_.size(), o.num_replicas, o.rank, o.shuffle, o.seed, o.drop_last) {
  STRIDER_CHECK(o.batch_size > 0, "DataLoader", "batch_size must be positive, got ", o.batch_size);
  STRIDER_CHECK(o.std > 0, "DataLoader", "std must be positive, got ", o.std);
  STRIDER_CHECK(data_.images.defined() && data_.images.dim() == 4 && data_.images.dtype() == kByte, "DataLoader",
                "expected uint8 images [N, C, H, W], got ",
                data_.images.defined() ? data_.images.sizes() : IntArrayRef(), " ",
                data_.images.defined() ? to_string(data_.images.dtype()) : "undefined");
  STRIDER_CHECK(data_.labels.defined() && data_.labels.dim() == 1 && data_.labels.dtype() == kLong &&
                    data_.labels.size(0) == data_.images.size(0),
                "DataLoader", "expected int64 labels [", data_.images.size(0), "] (one per image), got ",
                data_.labels.defined() ? data_.labels.sizes() : IntArrayRef(), " ",
                data_.labels.defined() ? to_string(data_.labels.dtype()) : "undefined");
  data_.labels = data_.labels.contiguous();
}

DataLoader::~DataLoader() { stop_worker(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = sampler_.num_samples();
  return o_.drop_last ? n / o_.batch_size : (n + o_.batch_size - 1) / o_.batch_size;
}

Batch DataLoader::make_batch(const std::vector<int64_t>& idx, int64_t begin, int64_t end) const {
  autograd::NoGradGuard g;
  const int64_t b = end - begin;
  const auto& s = data_.images.sizes();
  const int64_t per = s[1] * s[2] * s[3];
  Tensor raw = empty({b, s[1], s[2], s[3]}, kByte);
  Tensor target = empty({b}, kLong);
  const uint8_t* src = data_.images.contiguous().data_ptr<uint8_t>();
  const int64_t* labels = data_.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    const int64_t k = idx[static_cast<size_t>(begin + i)];
    std::memcpy(raw.data_ptr<uint8_t>() + i * per, src + k * per, static_cast<size_t>(per));
    target.data_ptr<int64_t>()[i] = labels[k];
  }
  Tensor x = (raw.to(kFloat) * (1.0 / (255.0 * o_.std))) - (o_.mean / o_.std);
  if (o_.dtype != kFloat) x = x.to(o_.dtype);
  // to(), as PyTorch's x.to(memory_format=...): contiguous() would keep a one-channel batch's NCHW
  // strides (it is channels-last dense as well).
  if (o_.memory_format != MemoryFormat::Contiguous) x = x.to(o_.memory_format);
  return {x, target};
}

void DataLoader::stop_worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  stop_ = false;
  ready_.clear();
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  STRIDER_CHECK(first_batch >= 0 && first_batch <= batches_per_epoch(), "DataLoader::start_epoch", "first batch ",
                first_batch, " is outside the epoch's ", batches_per_epoch(), " batches");
  stop_worker();
  order_ = sampler_.indices(epoch);
  cursor_ = first_batch;
  if (!o_.prefetch) return;
  worker_error_ = nullptr;
  worker_ = std::thread([this, first_batch] {
    // One OpenMP thread here: the training thread owns the cores.
    try {
      const int64_t n = batches_per_epoch();
      for (int64_t i = first_batch; i < n; ++i) {
        const int64_t begin = i * o_.batch_size;
        const int64_t end = std::min<int64_t>(begin + o_.batch_size, static_cast<int64_t>(order_.size()));
        Batch b = make_batch(order_, begin, end);
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || ready_.size() < 2; });
        if (stop_) return;
        ready_.push_back(std::move(b));
        cv_.notify_all();
      }
    } catch (...) {  // an exception must not end the process from this thread: next() rethrows it
      std::lock_guard<std::mutex> lock(mu_);
      worker_error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::nullopt);
    cv_.notify_all();
  });
}

std::optional<Batch> DataLoader::next() {
  if (!o_.prefetch) {
    if (cursor_ >= batches_per_epoch()) return std::nullopt;
    const int64_t begin = cursor_ * o_.batch_size;
    const int64_t end = std::min<int64_t>(begin + o_.batch_size, static_cast<int64_t>(order_.size()));
    ++cursor_;
    return make_batch(order_, begin, end);
  }
  std::unique_lock<std::mutex> lock(mu_);
  STRIDER_CHECK(worker_.joinable(), "DataLoader::next", "call start_epoch() before next()");
  cv_.wait(lock, [&] { return !ready_.empty(); });
  if (worker_error_ && !ready_.front()) std::rethrow_exception(std::exchange(worker_error_, nullptr));
  std::optional<Batch> b = std::move(ready_.front());
  ready_.pop_front();
  cv_.notify_all();
  return b;
}

}  // namespace strider::io
