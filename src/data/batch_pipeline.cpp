#include "batch_pipeline.h"

#include "strider/autograd/grad_mode.h"

namespace strider::data::detail {

BatchPipeline::BatchPipeline(std::vector<std::unique_ptr<BatchSource>> sources, int64_t lookahead)
    : sources_(std::move(sources)), lookahead_(lookahead) {
  threads_.reserve(sources_.size());
  for (size_t w = 0; w < sources_.size(); ++w) threads_.emplace_back([this, w] { work(w); });
}

BatchPipeline::~BatchPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void BatchPipeline::work(size_t w) {
  autograd::NoGradGuard no_grad;  // a loader's tensors never record a graph (grad mode is per thread)
  const auto n = static_cast<int64_t>(sources_.size());
  for (int64_t b = static_cast<int64_t>(w);; b += n) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || b < next_ + lookahead_ || b >= end_; });
      if (stop_ || b >= end_) return;
    }
    std::optional<Batch> batch;
    std::exception_ptr error;
    try {
      batch = sources_[w]->produce(b);
    } catch (...) {  // must not end the process from this thread: next() rethrows it in order
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error) {
      failed_[b] = error;
    } else if (batch) {
      ready_.emplace(b, std::move(*batch));
    } else if (b < end_) {
      end_ = b;
    }
    cv_.notify_all();
    if (error || !batch) return;
  }
}

std::optional<Batch> BatchPipeline::next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ready_.count(next_) || failed_.count(next_) || next_ >= end_; });
  if (auto f = failed_.find(next_); f != failed_.end()) std::rethrow_exception(f->second);  // again on every call
  if (next_ >= end_) return std::nullopt;
  auto it = ready_.find(next_);
  Batch batch = std::move(it->second);
  ready_.erase(it);
  ++next_;
  cv_.notify_all();
  return batch;
}

}  // namespace strider::data::detail
