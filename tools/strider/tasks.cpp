#include "train_task.h"

namespace strider::tools {

std::vector<std::string> model_names() { return {"fmnist_resnet", "small_cnn", "resnet18", "resnet34", "resnet50", "gpt"}; }

std::unique_ptr<TrainTask> make_task(const TrainOptions& o) {
  if (o.model == "gpt") return o.tokens.empty() ? make_text_task(o) : make_token_task(o);
  return o.image_folder.empty() ? make_image_task(o) : make_image_folder_task(o);
}

Tensor run_model(nn::Module& model, const Tensor& input, ScalarType cast_dtype) {
  if (cast_dtype != kBFloat16) return model(input);
  nn::CastParameters cast(model, kBFloat16);
  return model(input);
}

}  // namespace strider::tools
