#include "checkpoint.h"

#include <charconv>
#include <map>

namespace strider::tools {
namespace {

constexpr const char* kOp = "checkpoint";

std::string field(const io::Metadata& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  STRIDER_CHECK(it != m.end(), kOp, path, " has no '", key, "' entry in its metadata; not a strider training checkpoint");
  return it->second;
}

int64_t integer_field(const io::Metadata& m, const std::string& key, const std::string& path) {
  const std::string s = field(m, key, path);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  STRIDER_CHECK(ec == std::errc() && end == s.data() + s.size() && v >= 0, kOp, path, ": metadata '", key, "' is '", s,
                "', not a non-negative integer");
  return v;
}

}  // namespace

void save_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt, const CheckpointInfo& info) {
  io::TensorMap t;
  for (auto& [n, v] : model.state_dict()) t["model." + n] = v;
  for (auto& [pname, st] : opt.state())
    for (auto& [k, v] : st) t["optim." + pname + "." + k] = v;
  io::save_safetensors(path, t, {{"model", info.model}, {"layout", info.layout}, {"epoch", std::to_string(info.epoch)},
                                 {"optimizer", info.optimizer},
                                 {"optimizer_steps", std::to_string(info.optimizer_steps)}});
}

CheckpointInfo read_checkpoint_info(const io::SafetensorsFile& f, const std::string& path) {
  CheckpointInfo info;
  info.model = field(f.metadata, "model", path);
  info.layout = field(f.metadata, "layout", path);
  info.optimizer = field(f.metadata, "optimizer", path);
  info.epoch = integer_field(f.metadata, "epoch", path);
  info.optimizer_steps = integer_field(f.metadata, "optimizer_steps", path);
  return info;
}

CheckpointInfo load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt,
                               const CheckpointInfo& expect, bool reset_optimizer) {
  io::SafetensorsFile f = io::load_safetensors(path, {.require_checksum = true});
  const CheckpointInfo info = read_checkpoint_info(f, path);
  STRIDER_CHECK(info.model == expect.model, kOp, path, " holds a '", info.model, "' model, not '", expect.model,
                "'; pass the model flags it was trained with");
  STRIDER_CHECK(info.layout == expect.layout, kOp, path, " holds ", info.layout, " but this run is ", expect.layout,
                "; resume with the same --fsdp and number of ranks (mpirun -np) it was written with");
  STRIDER_CHECK(reset_optimizer || info.optimizer == expect.optimizer, kOp, path, " holds ", info.optimizer,
                " state but this run uses --optimizer ", expect.optimizer,
                "; use the same optimizer, or --reset-optimizer to start with fresh optimizer state");

  // The model: exact names, shapes and dtypes (no silent conversion of a float64 or int64 tensor).
  std::map<std::string, Tensor> model_state;
  optim::OptimizerState opt_state;
  std::map<std::string, Tensor> own;
  for (auto& [n, v] : model.named_parameters()) own[n] = v;
  for (auto& [n, v] : model.named_buffers()) own[n] = v;
  std::map<std::string, std::string> param_of_prefix;  // "optim.<param>." -> param
  for (auto& [pn, p] : opt.params()) param_of_prefix["optim." + pn + "."] = pn;
  for (auto& [n, v] : f.tensors) {
    if (n.rfind("model.", 0) == 0) {
      const std::string name = n.substr(6);
      if (nn::is_state_dict_metadata(name)) {  // a sharded model's marker: load_state_dict checks it
        model_state[name] = v;
        continue;
      }
      auto it = own.find(name);
      STRIDER_CHECK(it != own.end(), kOp, path, ": tensor '", n, "' is not part of the model");
      STRIDER_CHECK(v.sizes() == it->second.sizes() && v.dtype() == it->second.dtype(), kOp, path, ": tensor '", n,
                    "' is ", v.sizes(), " ", v.dtype(), " but the model's '", name, "' is ", it->second.sizes(), " ",
                    it->second.dtype());
      model_state[name] = v;
      continue;
    }
    STRIDER_CHECK(n.rfind("optim.", 0) == 0, kOp, path, ": unexpected tensor '", n,
                  "' (a training checkpoint holds only model.* and optim.* tensors)");
    if (reset_optimizer) continue;
    // The longest parameter name that prefixes it (parameter names contain dots too).
    std::string param;
    for (auto& [prefix, pn] : param_of_prefix)
      if (n.rfind(prefix, 0) == 0 && pn.size() > param.size()) param = pn;
    STRIDER_CHECK(!param.empty(), kOp, path, ": optimizer state '", n, "' belongs to no parameter of this model");
    opt_state[param][n.substr(6 + param.size() + 1)] = v;
  }
  for (auto& [name, t] : own)
    STRIDER_CHECK(model_state.count(name), kOp, path, " lacks the model's tensor 'model.", name, "'");

  // Validate the optimizer state on a scratch copy of the optimizer's view, then commit both.
  const int64_t steps = reset_optimizer ? 0 : info.optimizer_steps;
  optim::OptimizerState before = opt.state();
  const int64_t steps_before = opt.step_count();
  opt.load_state(reset_optimizer ? optim::OptimizerState{} : opt_state, steps, path);
  try {
    model.load_state_dict(model_state);
  } catch (...) {
    opt.state() = before;
    opt.set_step_count(steps_before);
    throw;
  }
  return info;
}

}  // namespace strider::tools
