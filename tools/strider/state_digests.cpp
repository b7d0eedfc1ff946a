#include "state_digests.h"

#include <map>

namespace strider::tools {

StateDigests state_digests(nn::Module& model, fsdp::FullyShardedDataParallel* engine, optim::Optimizer& opt) {
  std::map<std::string, Tensor> params;
  std::map<std::string, std::map<std::string, Tensor>> state;
  if (engine) {
    // Each parameter once, under its first name (a tied one too), as named_parameters() gives
    // them in one process.
    const auto full = engine->full_state_dict();
    for (auto& [name, p] : engine->named_parameters()) params[name] = full.at(name);
    state = engine->full_optimizer_state_dict(opt);
  } else {
    for (auto& [name, p] : model.named_parameters()) params[name] = p;
    state = opt.state();
  }
  std::map<std::string, Tensor> flat;
  for (auto& [name, keys] : state)
    for (auto& [key, t] : keys) flat[name + "." + key] = t;
  flat["(optimizer steps)"] = full({1}, opt.step_count(), kLong);
  return {io::tensors_sha256(params), io::tensors_sha256(flat)};
}

}  // namespace strider::tools
