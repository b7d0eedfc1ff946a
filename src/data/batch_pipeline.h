#pragma once
// The DataLoader's workers: n threads compute batches ahead of the consumer and next() hands
// them out in batch order. Worker w computes batches w, w + n, w + 2n, ... with its own
// BatchSource (so a streaming source reads its share in order); it waits while it is more than
// `lookahead` batches ahead of the consumer. The destructor stops and joins every worker,
// whatever state they are in.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "strider/data/sample.h"

namespace strider::data::detail {

// Computes batch `b` (counted from the pass's first batch); nullopt past the end. One worker
// calls it with increasing b; it may throw.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual std::optional<Batch> produce(int64_t b) = 0;
};

class BatchPipeline {
 public:
  BatchPipeline(std::vector<std::unique_ptr<BatchSource>> sources, int64_t lookahead);
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;
  // The next batch in order, nullopt at the end; rethrows the exception of the batch that failed.
  std::optional<Batch> next();

 private:
  void work(size_t w);

  std::vector<std::unique_ptr<BatchSource>> sources_;
  int64_t lookahead_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Batch> ready_;
  std::map<int64_t, std::exception_ptr> failed_;
  int64_t end_ = INT64_MAX;  // the first batch a source reported past the end
  int64_t next_ = 0;         // the batch next() hands out next
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strider::data::detail
