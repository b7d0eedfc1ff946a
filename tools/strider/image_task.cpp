// Fashion-MNIST classification: the default job.
#include "train_task.h"

namespace strider::tools {
namespace {

// A Fashion-MNIST split's identity for the run record: its size and a digest of its pixels and
// labels (a --data-dir holding other files trains on other images).
std::string split_identity(const io::ImageDataset& d) {
  const Tensor images = d.images.contiguous(), labels = d.labels.contiguous();
  DataDigest digest;
  digest.add(images.data_ptr<uint8_t>(), images.nbytes());
  digest.add(labels.data_ptr<int64_t>(), labels.nbytes());
  return std::to_string(d.size()) + " images, digest " + digest.hex();
}

class ImageTask final : public TrainTask {
 public:
  explicit ImageTask(const TrainOptions& o) : o_(o) {}

  std::string describe() const override { return "Fashion-MNIST"; }

  std::shared_ptr<nn::Module> make_model() override {
    if (o_.model == "fmnist_resnet") return models::fmnist_resnet(10, 1);
    if (o_.model == "small_cnn") return models::small_cnn(10, 1);
    if (o_.model == "resnet18") return models::resnet18(10, 1);
    if (o_.model == "resnet34") return models::resnet34(10, 1);
    if (o_.model == "resnet50") return models::resnet50(10, 1);
    STRIDER_CHECK(false, "train", "unknown model '", o_.model, "'; use fmnist_resnet, small_cnn, resnet18, resnet34, "
                  "resnet50 or gpt");
    return nullptr;
  }
  std::string model_signature() const override { return o_.model; }

  void open_data(int rank, int world, int64_t batch_per_rank, ScalarType input_dtype) override {
    const MemoryFormat fmt = memory_format_from_string(o_.memory_format);
    // Fashion-MNIST's pixel statistics; each rank reads a disjoint slice of the same shuffled order.
    io::DataLoaderOptions lo{.batch_size = batch_per_rank, .shuffle = true, .seed = o_.seed, .drop_last = true,
                             .mean = 0.2860, .std = 0.3530, .dtype = input_dtype, .memory_format = fmt,
                             .num_replicas = world, .rank = rank};
    io::ImageDataset train = io::load_fashion_mnist(o_.data_dir, "train"), test = io::load_fashion_mnist(o_.data_dir, "test");
    train_identity_ = split_identity(train);
    test_identity_ = split_identity(test);
    train_ = std::make_unique<io::DataLoader>(std::move(train), lo);
    io::DataLoaderOptions to = lo;
    to.batch_size = 1000;
    to.shuffle = false;
    to.drop_last = false;
    to.num_replicas = 1;
    to.rank = 0;
    test_ = std::make_unique<io::DataLoader>(std::move(test), to);
  }
  std::vector<RunProperty> data_record() const override {
    return {{"training_data", "the training data (Fashion-MNIST's train split in --data-dir '" + o_.data_dir + "')",
             train_identity_, "resume with the data it was trained on"},
            {"validation_data", "the validation data (Fashion-MNIST's test split in --data-dir '" + o_.data_dir + "')",
             test_identity_, "resume with the data it was scored on"}};
  }
  void start_epoch(int64_t epoch, int64_t first_batch) override { train_->start_epoch(epoch, first_batch); }
  std::optional<io::Batch> next() override { return train_->next(); }
  int64_t batches_per_epoch() const override { return train_->batches_per_epoch(); }
  const char* sample_unit() const override { return "img"; }

  Tensor loss(const Tensor& logits, const io::Batch& b) const override {
    return nn::functional::cross_entropy(logits.to(kFloat), b.target, nn::functional::Reduction::Mean,
                                         o_.label_smoothing);
  }

  EvalResult evaluate(nn::Module& model, ScalarType cast_dtype) override {
    NoGradGuard g;
    model.eval();
    int64_t correct = 0, total = 0;
    test_->start_epoch(0);
    while (auto b = test_->next()) {
      Tensor logits = run_model(model, b->input, cast_dtype);
      correct += sum(eq(argmax(logits.to(kFloat), 1), b->target)).item<int64_t>();
      total += b->target.numel();
    }
    model.train();
    const double acc = total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
    return {"test_accuracy", acc, "test accuracy " + std::to_string(100 * acc).substr(0, 5) + "%"};
  }

 private:
  TrainOptions o_;
  std::unique_ptr<io::DataLoader> train_, test_;
  std::string train_identity_, test_identity_;  // for data_record
};

}  // namespace

std::unique_ptr<TrainTask> make_image_task(const TrainOptions& o) { return std::make_unique<ImageTask>(o); }

}  // namespace strider::tools
