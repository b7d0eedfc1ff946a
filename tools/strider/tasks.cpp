#include "train_task.h"

namespace strider::tools {

std::vector<std::string> model_names() { return {"fmnist_resnet", "small_cnn", "resnet18", "gpt"}; }

std::unique_ptr<TrainTask> make_task(const TrainOptions& o) {
  return o.model == "gpt" ? make_text_task(o) : make_image_task(o);
}

Tensor run_model(nn::Module& model, const Tensor& input, ScalarType cast_dtype) {
  if (cast_dtype != kBFloat16) return model(input);
  nn::CastParameters cast(model, kBFloat16);
  return model(input);
}

}  // namespace strider::tools
