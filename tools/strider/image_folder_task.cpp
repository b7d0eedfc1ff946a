// Image classification on a folder of images (--image-folder root/<class>/<file>.png|jpg|jpeg):
// the class count from the folder, every image in RGB (torchvision's ImageFolder converts each
// with PIL's convert("RGB"); taking the channels from one image made a folder gray when its first
// image was), held-out accuracy on --val-image-folder or on a seeded 10% of the training folder.
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "data_feed.h"
#include "image_folder_dataset.h"
#include "train_task.h"

namespace strider::tools {
namespace {

constexpr double kValFraction = 0.1;

constexpr int64_t kChannels = 3;

// ImageNet's channel statistics, the usual choice for photos.
data::Normalize normalization() { return {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}}; }

// The side every image is brought to (--image-size; small_cnn's 28; or the first image's shorter
// side), in RGB.
io::ImageFolderOptions folder_options(const TrainOptions& o) {  // validate() checked small_cnn's --image-size
  io::ImageFolder probe(o.image_folder);
  Tensor first = probe.image(0);
  int64_t side = o.image_size > 0 ? o.image_size : std::min(first.size(1), first.size(2));
  if (o.model == "small_cnn") side = kSmallCnnImageSide;
  return {.image_size = side, .channels = kChannels};
}

// An image folder's identity for the run record: its classes and its images' names below the
// root, labels and file sizes (not the root, so a copy moved elsewhere resumes; not the images'
// bytes, which would be a pass over the whole data set at every start).
std::string folder_identity(const io::ImageFolder& folder, const std::string& root) {
  const size_t root_length = std::filesystem::path(root).string().size();  // each path is root/<class>/...
  DataDigest digest;
  for (const std::string& c : folder.classes()) digest.add(c);
  for (const io::ImageFolderSample& s : folder.samples()) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(s.path, ec);  // unreadable: decoding it names the file
    const std::string below_root = s.path.substr(std::min(root_length, s.path.size()));
    digest.add(below_root.substr(below_root.starts_with('/') ? 1 : 0));
    digest.add(s.label);
    digest.add(ec ? int64_t{-1} : static_cast<int64_t>(bytes));
  }
  return std::to_string(folder.size()) + " images in " + std::to_string(folder.classes().size()) +
         " classes, digest of names and sizes " + digest.hex();
}

class ImageFolderTask final : public TrainTask {
 public:
  explicit ImageFolderTask(const TrainOptions& o) : o_(o), options_(folder_options(o)) {
    train_folder_ = std::make_shared<io::ImageFolder>(o.image_folder, options_);
    if (!o.val_image_folder.empty()) {
      val_folder_ = std::make_shared<io::ImageFolder>(o.val_image_folder, options_);
      STRIDER_CHECK(val_folder_->classes() == train_folder_->classes(), "train", "--val-image-folder '",
                    o.val_image_folder, "' has ", val_folder_->classes().size(), " classes, --image-folder '",
                    o.image_folder, "' ", train_folder_->classes().size(), class_difference(),
                    "; both need the same class folders (the same names)");
      train_ = std::make_shared<ImageFolderSubset>(train_folder_, all_indices(train_folder_->size()));
      val_ = std::make_shared<ImageFolderSubset>(val_folder_, all_indices(val_folder_->size()));
    } else {
      HeldOutSplit split = hold_out(train_folder_->size(), kValFraction, o.seed);
      train_ = std::make_shared<ImageFolderSubset>(train_folder_, split.train);
      val_ = std::make_shared<ImageFolderSubset>(train_folder_, split.held_out);
    }
  }

  std::string describe() const override {
    std::ostringstream s;
    s << "image folder '" << o_.image_folder << "' (" << classes() << " classes, " << train_->size()
      << " training images, " << options_.channels << "x" << options_.image_size << "x" << options_.image_size;
    if (val_folder_)
      s << "; validation '" << o_.val_image_folder << "', " << val_->size() << " images)";
    else
      s << "; a seeded 10%, " << val_->size() << " images, held out for validation)";
    return s.str();
  }

  std::shared_ptr<nn::Module> make_model() override {
    const int64_t k = classes(), c = options_.channels;
    if (o_.model == "small_cnn") return models::small_cnn(k, c);
    if (o_.model == "resnet18") return models::resnet18(k, c);
    if (o_.model == "resnet34") return models::resnet34(k, c);
    if (o_.model == "resnet50") return models::resnet50(k, c);
    return models::fmnist_resnet(k, c);
  }
  std::string model_signature() const override {
    return o_.model + "(classes=" + std::to_string(classes()) + ",channels=" + std::to_string(options_.channels) +
           ",size=" + std::to_string(options_.image_size) + ")";
  }

  std::vector<RunProperty> data_record() const override {
    return {{"training_data", "the training data (--image-folder '" + o_.image_folder + "')",
             folder_identity(*train_folder_, o_.image_folder), "resume with the images it was trained on"},
            {"validation_data",
             val_folder_ ? "the validation data (--val-image-folder '" + o_.val_image_folder + "')"
                         : std::string("the validation data"),
             val_folder_ ? "--val-image-folder: " + folder_identity(*val_folder_, o_.val_image_folder)
                         : "a seeded " + std::to_string(static_cast<int>(kValFraction * 100)) +
                               "% of --image-folder held out",
             "resume with the validation data it was scored on (--val-image-folder, or none)"}};
  }

  void open_data(int rank, int world, int64_t batch_per_rank, ScalarType input_dtype) override {
    STRIDER_CHECK(train_->size() >= world, "train", "--image-folder '", o_.image_folder, "' has ", train_->size(),
                  " training images, fewer than the ", world, " ranks; add images or use fewer ranks");
    global_batch_ = batch_per_rank * world;
    auto sampler = std::make_shared<data::DistributedSampler>(
        train_->size(), data::DistributedSamplerOptions{
                            .num_replicas = world, .rank = rank, .shuffle = true, .seed = o_.seed, .drop_last = true});
    const data::Normalize norm = normalization();
    train_loader_ = std::make_unique<data::DataLoader>(
        train_, data::DataLoaderOptions{
                    .batch_size = batch_per_rank, .seed = o_.seed, .drop_last = true, .num_workers = o_.data_workers,
                    .sampler = sampler,
                    .transform = data::apply_to("image", data::Compose({data::ToFloat{}, norm,
                                                                        data::RandomHorizontalFlip{}})),
                    .collate = collate(input_dtype)});
    val_loader_ = std::make_unique<data::DataLoader>(
        val_, data::DataLoaderOptions{.batch_size = 100, .num_workers = o_.data_workers,
                                      .transform = data::apply_to("image", data::Compose({data::ToFloat{}, norm})),
                                      .collate = collate(input_dtype)});
  }
  void start_epoch(int64_t epoch, int64_t first_batch) override {
    start_at_batch(*train_loader_, epoch, first_batch, global_batch_);
  }
  std::optional<io::Batch> next() override { return next_batch(*train_loader_, "image", "label"); }
  int64_t batches_per_epoch() const override { return train_loader_->batches_per_epoch(); }
  const char* sample_unit() const override { return "img"; }

  Tensor loss(const Tensor& logits, const io::Batch& b) const override {
    return nn::functional::cross_entropy(logits.to(kFloat), b.target, nn::functional::Reduction::Mean,
                                         o_.label_smoothing);
  }

  EvalResult evaluate(nn::Module& model, ScalarType cast_dtype) override {
    NoGradGuard g;
    model.eval();
    int64_t correct = 0, total = 0;
    val_loader_->set_epoch(0);
    try {
      while (auto b = next_batch(*val_loader_, "image", "label")) {
        Tensor logits = run_model(model, b->input, cast_dtype);
        correct += sum(eq(argmax(logits.to(kFloat), 1), b->target)).item<int64_t>();
        total += b->target.numel();
      }
    } catch (const Error& e) {  // the loader counts its own batches and epochs: say which pass it was
      STRIDER_CHECK(false, "train", "the validation pass over ",
                    val_folder_ ? "--val-image-folder '" + o_.val_image_folder + "'"
                                : "the seeded 10% of --image-folder '" + o_.image_folder + "' held out for validation",
                    ": ", e.what());
    }
    model.train();
    const double acc = total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
    return {"test_accuracy", acc, "held-out accuracy " + std::to_string(100 * acc).substr(0, 5) + "%"};
  }

 private:
  int64_t classes() const { return static_cast<int64_t>(train_folder_->classes().size()); }
  // ": only in --image-folder: a, b; only in --val-image-folder: c" (labels are class indices, so
  // the same names in another order would be wrong too; both lists are sorted).
  std::string class_difference() const {
    const std::vector<std::string>&train = train_folder_->classes(), &val = val_folder_->classes();
    std::vector<std::string> only_train, only_val;
    std::set_difference(train.begin(), train.end(), val.begin(), val.end(), std::back_inserter(only_train));
    std::set_difference(val.begin(), val.end(), train.begin(), train.end(), std::back_inserter(only_val));
    auto list = [](const std::vector<std::string>& names) {
      std::string s;
      for (size_t i = 0; i < names.size() && i < 10; ++i) s += (i ? ", " : "") + names[i];
      return names.size() > 10 ? s + " and " + std::to_string(names.size() - 10) + " more" : s;
    };
    std::string s;
    if (!only_train.empty()) s += "; only in --image-folder: " + list(only_train);
    if (!only_val.empty()) s += "; only in --val-image-folder: " + list(only_val);
    return s;
  }
  // Stacks the samples, then the run's input dtype and memory format (in the worker thread).
  data::CollateFn collate(ScalarType dtype) const {
    const MemoryFormat fmt = memory_format_from_string(o_.memory_format);
    return [dtype, fmt](std::vector<data::Sample> samples) {
      data::Batch b = data::default_collate(std::move(samples));
      b["image"] = b.at("image").to(dtype).contiguous(fmt);
      return b;
    };
  }

  TrainOptions o_;
  io::ImageFolderOptions options_;
  std::shared_ptr<io::ImageFolder> train_folder_, val_folder_;
  std::shared_ptr<ImageFolderSubset> train_, val_;
  int64_t global_batch_ = 0;
  std::unique_ptr<data::DataLoader> train_loader_, val_loader_;
};

}  // namespace

std::unique_ptr<TrainTask> make_image_folder_task(const TrainOptions& o) {
  return std::make_unique<ImageFolderTask>(o);
}

}  // namespace strider::tools
