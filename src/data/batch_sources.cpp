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
    const int64_t B = slice_.batch_size, W = slice_.num_replicas;
    const int64_t global_first = slice_.first_sample + b * B * W, first = global_first + slice_.rank * B;
    std::vector<Sample> samples;
    for (int64_t i = 0; i < B; ++i) {
      std::optional<Sample> s = read_at(b, first + i);
      if (!s) break;
      samples.push_back(transformed(*plan_, b, first + i, std::move(*s)));
    }
    const auto got = static_cast<int64_t>(samples.size());
    if (W == 1) {
      if (got < B) exhausted_ = true;
      if (got == 0 || (got < B && slice_.drop_last)) return std::nullopt;
      return collate(*plan_, b, std::move(samples));
    }
    // Several ranks must take the same number of batches, or their collectives would disagree:
    // a global batch is whole on every rank or on none.
    if (got == B && (slice_.rank == W - 1 || read_at(b, global_first + B * W - 1)))
      return collate(*plan_, b, std::move(samples));
    exhausted_ = true;
    const int64_t total = got == 0 ? samples_from(b, global_first, first)
                          : got < B   ? first - global_first + got
                                      : first + B - global_first + samples_from(b, first + B, global_first + B * W);
    if (total == 0 || slice_.drop_last) return std::nullopt;
    return collate(*plan_, b, padded_share(b, global_first, total));
  }

 private:
  // The last, incomplete global batch of `total` samples, as DistributedSampler pads: repeated
  // from its start up to a multiple of the ranks, then split into equal shares in rank order.
  std::vector<Sample> padded_share(int64_t b, int64_t global_first, int64_t total) {
    const int64_t W = slice_.num_replicas, share = (total + W - 1) / W;
    std::vector<Sample> samples;
    for (int64_t j = slice_.rank * share; j < (slice_.rank + 1) * share; ++j) {
      const int64_t position = global_first + j % total;
      std::optional<Sample> s = read_at(b, position);
      STRIDER_CHECK(s.has_value(), "DataLoader", "the stream ended before sample ", position,
                    ", which it had given earlier in this pass; an IterableDataset must give the same samples each time "
                    "it is opened in one epoch");
      samples.push_back(transformed(*plan_, b, position, std::move(*s)));
    }
    return samples;
  }

  // How many samples the stream holds in [from, to).
  int64_t samples_from(int64_t b, int64_t from, int64_t to) {
    int64_t n = 0;
    while (from + n < to && read_at(b, from + n)) ++n;
    return n;
  }

  // The sample at stream position `position`, or nullopt past the end; reopens the stream to
  // go back, skips to go forward.
  std::optional<Sample> read_at(int64_t b, int64_t position) {
    if (!stream_ || position < at_) {
      stream_ = guarded(*plan_, b, position, "opening the stream at", [&] { return dataset_->open(position, worker_); });
      STRIDER_CHECK(stream_ != nullptr, "DataLoader", "IterableDataset::open returned null for sample ", position);
      at_ = position;
    }
    if (position > at_) {
      guarded(*plan_, b, position, "skipping to", [&] {
        stream_->skip(position - at_);
        return 0;
      });
      at_ = position;
    }
    std::optional<Sample> s = guarded(*plan_, b, position, "reading", [&] { return stream_->next(); });
    if (s) ++at_;
    else stream_.reset();  // at the end: where a skip stopped is unknown
    return s;
  }

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
