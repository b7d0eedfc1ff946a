#include "strider/data/data_loader.h"

#include "batch_pipeline.h"
#include "batch_sources.h"
#include "strider/autograd/grad_mode.h"
#include "strider/core/error.h"

namespace strider::data {

struct DataLoader::Pass {
  std::unique_ptr<detail::BatchSource> inline_source;  // num_workers == 0
  std::unique_ptr<detail::BatchPipeline> pipeline;
  std::vector<int64_t> global_samples;  // map-style: per batch of the pass; empty: `per_batch` each
  int64_t per_batch = 0;
  int64_t next = 0;

  std::optional<Batch> take() {
    if (pipeline) return pipeline->next();
    autograd::NoGradGuard no_grad;
    return inline_source->produce(next);
  }
  int64_t samples_of(int64_t b) const {
    return global_samples.empty() ? per_batch : global_samples[static_cast<size_t>(b)];
  }
};

namespace {

void check_common(const DataLoaderOptions& o) {
  STRIDER_CHECK(o.batch_size > 0, "DataLoader", "batch_size must be positive, got ", o.batch_size);
  STRIDER_CHECK(o.num_workers >= 0, "DataLoader", "num_workers must be >= 0 (0 reads in the caller's thread), got ",
                o.num_workers);
  STRIDER_CHECK(o.prefetch_factor > 0, "DataLoader", "prefetch_factor must be positive, got ", o.prefetch_factor);
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions o)
    : map_(std::move(dataset)), options_(std::move(o)) {
  const DataLoaderOptions& op = options_;
  STRIDER_CHECK(map_ != nullptr, "DataLoader", "got a null dataset");
  check_common(op);
  STRIDER_CHECK(op.num_replicas == 1 && op.rank == 0, "DataLoader",
                "num_replicas and rank are for an IterableDataset; a map-style dataset is split by a DistributedSampler "
                "(options.sampler)");
  STRIDER_CHECK(!(op.sampler && op.shuffle), "DataLoader",
                "sampler and shuffle are mutually exclusive; shuffle with the sampler's own option (or drop shuffle)");
  if (op.batch_sampler) {
    STRIDER_CHECK(op.batch_size == 1 && !op.shuffle && !op.sampler && !op.drop_last, "DataLoader",
                  "batch_sampler is mutually exclusive with batch_size (", op.batch_size, "), shuffle (", op.shuffle,
                  "), sampler and drop_last (", op.drop_last, "); give them to the BatchSampler instead");
    batches_ = op.batch_sampler;
    return;
  }
  std::shared_ptr<Sampler> sampler = op.sampler;
  if (!sampler && op.shuffle) {
    RandomSamplerOptions random;
    random.seed = op.seed;
    sampler = std::make_shared<RandomSampler>(map_->size(), random);
  }
  if (!sampler) sampler = std::make_shared<SequentialSampler>(map_->size());
  batches_ = std::make_shared<BatchSampler>(std::move(sampler), op.batch_size, op.drop_last);
}

DataLoader::DataLoader(std::shared_ptr<const IterableDataset> dataset, DataLoaderOptions o)
    : iterable_(std::move(dataset)), options_(std::move(o)) {
  const DataLoaderOptions& op = options_;
  STRIDER_CHECK(iterable_ != nullptr, "DataLoader", "got a null dataset");
  check_common(op);
  STRIDER_CHECK(!op.sampler && !op.batch_sampler && !op.shuffle, "DataLoader",
                "an IterableDataset has no indices to sample or shuffle; drop sampler, batch_sampler and shuffle "
                "(shuffle inside the stream, seeded by WorkerInfo::epoch)");
  STRIDER_CHECK(op.num_replicas > 0 && op.rank >= 0 && op.rank < op.num_replicas, "DataLoader", "rank ", op.rank,
                " is outside [0, ", op.num_replicas - 1, "] for num_replicas ", op.num_replicas);
}

DataLoader::~DataLoader() { stop_pass(); }

void DataLoader::stop_pass() { pass_.reset(); }  // the pipeline's destructor stops and joins its workers

void DataLoader::load_state(Position p) {
  STRIDER_CHECK(p.epoch >= 0 && p.samples_consumed >= 0, "DataLoader::load_state", "epoch ", p.epoch,
                " and samples_consumed ", p.samples_consumed, " must be >= 0");
  stop_pass();
  position_ = p;
}

int64_t DataLoader::batches_per_epoch() const {
  STRIDER_CHECK(map_ != nullptr, "DataLoader::batches_per_epoch", "an IterableDataset's length is unknown until it ends");
  return static_cast<int64_t>(batches_->batches(0).size());
}

void DataLoader::start_pass() {
  auto pass = std::make_unique<Pass>();
  auto plan = std::make_shared<detail::PassPlan>();
  plan->epoch = position_.epoch;
  plan->seed = options_.seed;
  plan->transform = options_.transform;
  plan->collate = options_.collate;
  const int64_t workers = options_.num_workers;
  std::vector<std::unique_ptr<detail::BatchSource>> sources;
  if (map_) {
    batches_->set_epoch(position_.epoch);
    const int64_t replicas = batches_->sampler().num_replicas();
    auto list = std::make_shared<const std::vector<std::vector<int64_t>>>(batches_->batches(position_.samples_consumed));
    for (const auto& b : *list) pass->global_samples.push_back(static_cast<int64_t>(b.size()) * replicas);
    plan->first_batch = position_.samples_consumed / (batches_->batch_size() * replicas);
    for (int64_t w = 0; w < std::max<int64_t>(workers, 1); ++w) sources.push_back(detail::make_map_source(map_, list, plan));
  } else {
    const int64_t global_batch = options_.batch_size * options_.num_replicas;
    pass->per_batch = global_batch;
    plan->first_batch = position_.samples_consumed / global_batch;
    const detail::StreamSlice slice{position_.samples_consumed, options_.batch_size, options_.num_replicas,
                                    options_.rank, options_.drop_last};
    for (int64_t w = 0; w < std::max<int64_t>(workers, 1); ++w)
      sources.push_back(detail::make_stream_source(iterable_, slice, {w, std::max<int64_t>(workers, 1), position_.epoch}, plan));
  }
  if (workers == 0) {
    pass->inline_source = std::move(sources.front());
  } else {
    pass->pipeline = std::make_unique<detail::BatchPipeline>(std::move(sources), workers * options_.prefetch_factor);
  }
  pass_ = std::move(pass);
}

std::optional<Batch> DataLoader::next() {
  if (!pass_) start_pass();
  std::optional<Batch> batch = pass_->take();
  if (!batch) {
    stop_pass();
    position_ = {position_.epoch + 1, 0};
    return std::nullopt;
  }
  position_.samples_consumed += pass_->samples_of(pass_->next);
  ++pass_->next;
  return batch;
}

DataLoader::Iterator::Iterator(DataLoader* loader) : loader_(loader), current_(loader->next()) {}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  current_ = loader_->next();
  return *this;
}

}  // namespace strider::data
