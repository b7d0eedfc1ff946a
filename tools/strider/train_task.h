#pragma once
// What `strider train` trains on: the model, its data and how it is scored. The training loop
// (train.cpp) is the same for every task, locally and under data parallelism.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <strider/strider.h>

#include "run_record.h"
#include "train_options.h"

namespace strider::tools {

struct EvalResult {
  std::string metric;  // "test_accuracy" (higher is better) or "val_loss" (lower is better)
  double value = 0;
  std::string summary;  // for the progress line, e.g. "test accuracy 91.2%"
};

class TrainTask {
 public:
  virtual ~TrainTask() = default;
  // "Fashion-MNIST", "text file 'x' (35149 bytes)"
  virtual std::string describe() const = 0;
  // The model and its configuration, stored in checkpoints so a resume cannot mix models.
  virtual std::shared_ptr<nn::Module> make_model() = 0;
  virtual std::string model_signature() const = 0;
  // Opens this rank's slice of the training data and the full evaluation data.
  virtual void open_data(int rank, int world, int64_t batch_per_rank, ScalarType input_dtype) = 0;
  // Starts an epoch at its batch first_batch (a resumed run skips what it trained on).
  virtual void start_epoch(int64_t epoch, int64_t first_batch) = 0;
  virtual std::optional<io::Batch> next() = 0;
  virtual int64_t batches_per_epoch() const = 0;
  virtual const char* sample_unit() const = 0;  // what target.numel() counts: "img" or "tok"
  virtual Tensor loss(const Tensor& output, const io::Batch& batch) const = 0;
  // Scores the model on held-out data (every rank runs it: sharded models need all ranks).
  virtual EvalResult evaluate(nn::Module& model, ScalarType cast_dtype) = 0;
  // The run record's properties of the data (run_record.h): what the training and the
  // validation data are (their size and a digest of their content or listing; not their path, so
  // a copy moved elsewhere resumes) and how the held-out part is drawn. After open_data.
  virtual std::vector<RunProperty> data_record() const = 0;
  // Runs after training on every rank; only the lead rank prints.
  virtual void after_training(nn::Module& /*model*/, ScalarType /*cast_dtype*/, bool /*lead*/) {}
};

std::unique_ptr<TrainTask> make_image_task(const TrainOptions& options);
std::unique_ptr<TrainTask> make_text_task(const TrainOptions& options);
std::unique_ptr<TrainTask> make_token_task(const TrainOptions& options);
std::unique_ptr<TrainTask> make_image_folder_task(const TrainOptions& options);

// The models --model offers, and the task that trains the one options.model names.
std::vector<std::string> model_names();
std::unique_ptr<TrainTask> make_task(const TrainOptions& options);

// The model's forward, in bfloat16 when asked (float32 master weights stay untouched).
Tensor run_model(nn::Module& model, const Tensor& input, ScalarType cast_dtype);

}  // namespace strider::tools
