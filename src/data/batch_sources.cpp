#include "batch_sources.h"

#include "strider/core/error.h"

namespace strider::data::detail {
namespace {

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// Reads or transforms one sample; an exception becomes an Error naming the batch and the sample.
template <class F>
auto guarded(const PassPlan& plan, int64_t b, int64_t index, const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    ::strider::detail::throw_error("DataLoader", ::strider::detail::str("batch ", plan.first_batch + b, " of epoch ", plan.epoch, ": ", what,
                                          " of sample ", index, " failed: ", what_of(std::current_exception())));
  }
}

Batch collate(const PassPlan& plan, int64_t b, std::vector<Sample> samples) {
  try {
    return plan.collate ? plan.collate(std::move(samples)) : default_collate(std::move(samples));
  } catch (...) {
    ::strider::detail::throw_error("DataLoader", ::strider::detail::str("batch ", plan.first_batch + b, " of epoch ", plan.epoch,
                                          ": collate failed: ", what_of(std::current_exception())));
  }
}

Sample transformed(const PassPlan& plan, int64_t b, int64_t index, Sample s) {
  if (!plan.transform) return s;
  return guarded(plan, b, index, "the transform", [&]() -> Sample {
    return plan.transform(std::move(s), SampleContext{plan.seed, plan.epoch, index, ""});
  });
}

class MapSource : public BatchSource {
 public:
  MapSource(std::shared_ptr<const Dataset> d, std::shared_ptr<const std::vector<std::vector<int64_t>>> batches,
            std::shared_ptr<const PassPlan> plan)
      : dataset_(std::move(d)), batches_(std::move(batches)), plan_(std::move(plan)) {}

  std::optional<Batch> produce(int64_t b) override {
    if (b >= static_cast<int64_t>(batches_->size())) return std::nullopt;
    std::vector<Sample> samples;
    for (int64_t index : (*batches_)[static_cast<size_t>(b)]) {
      Sample s = guarded(*plan_, b, index, "reading", [&] { return dataset_->get(index); });
      samples.push_back(transformed(*plan_, b, index, std::move(s)));
    }
    return collate(*plan_, b, std::move(samples));
  }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const std::vector<std::vector<int64_t>>> batches_;
  std::shared_ptr<const PassPlan> plan_;
};

class StreamSource : public BatchSource {
 public:
  StreamSource(std::shared_ptr<const IterableDataset> d, StreamSlice slice, WorkerInfo worker,
               std::shared_ptr<const PassPlan> plan)
      : dataset_(std::move(d)), slice_(slice), worker_(worker), plan_(std::move(plan)) {}

  std::optional<Batch> produce(int64_t b) override {
    if (exhausted_) return std::nullopt;
    const int64_t first = slice_.first_sample + b * slice_.batch_size * slice_.num_replicas + slice_.rank * slice_.batch_size;
    if (!stream_) {
      stream_ = guarded(*plan_, b, first, "opening the stream at", [&] { return dataset_->open(first, worker_); });
      STRIDER_CHECK(stream_ != nullptr, "DataLoader", "IterableDataset::open returned null for sample ", first);
      at_ = first;
    }
    STRIDER_INTERNAL_ASSERT(first >= at_, "stream batches must come in order");
    guarded(*plan_, b, first, "skipping to", [&] {
      stream_->skip(first - at_);
      return 0;
    });
    at_ = first;
    std::vector<Sample> samples;
    for (int64_t i = 0; i < slice_.batch_size; ++i) {
      std::optional<Sample> s = guarded(*plan_, b, at_, "reading", [&] { return stream_->next(); });
      if (!s) {
        exhausted_ = true;
        break;
      }
      samples.push_back(transformed(*plan_, b, at_, std::move(*s)));
      ++at_;
    }
    if (samples.empty() || (exhausted_ && slice_.drop_last)) {
      exhausted_ = true;
      return std::nullopt;
    }
    return collate(*plan_, b, std::move(samples));
  }

 private:
  std::shared_ptr<const IterableDataset> dataset_;
  StreamSlice slice_;
  WorkerInfo worker_;
  std::shared_ptr<const PassPlan> plan_;
  std::unique_ptr<SampleStream> stream_;
  int64_t at_ = 0;  // the stream's next sample
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<BatchSource> make_map_source(std::shared_ptr<const Dataset> dataset,
                                             std::shared_ptr<const std::vector<std::vector<int64_t>>> batches,
                                             std::shared_ptr<const PassPlan> plan) {
  return std::make_unique<MapSource>(std::move(dataset), std::move(batches), std::move(plan));
}

std::unique_ptr<BatchSource> make_stream_source(std::shared_ptr<const IterableDataset> dataset, StreamSlice slice,
                                                WorkerInfo worker, std::shared_ptr<const PassPlan> plan) {
  return std::make_unique<StreamSource>(std::move(dataset), slice, worker, std::move(plan));
}

}  // namespace strider::data::detail
