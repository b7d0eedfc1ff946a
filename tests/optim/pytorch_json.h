#pragma once
// Reading tests/golden/optim.json (tests/golden/generate_optim.py): tensors, PyTorch's optimizer
// options and optimizer.state_dict() as strider's types. The mapping of PyTorch's keys is the
// one include/strider/optim/optimizer_state_dict.h documents.
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <strider/strider.h>

namespace strider::testing {

inline const nlohmann::json& optim_golden() {
  static const nlohmann::json g = [] {
    std::ifstream f(STRIDER_GOLDEN_DIR "/optim.json");
    EXPECT_TRUE(f.good()) << "cannot open " << STRIDER_GOLDEN_DIR "/optim.json";
    return nlohmann::json::parse(f);
  }();
  return g;
}

// {"shape": [...], "values": [...]} as a float64 tensor.
inline Tensor tensor_from_json(const nlohmann::json& j) {
  const auto values = j.at("values").get<std::vector<double>>();
  const auto shape = j.at("shape").get<std::vector<int64_t>>();
  return tensor(values, kDouble).reshape(DimVector(shape.begin(), shape.end()));
}

// A PyTorch param group's (or constructor's) options. Implementation switches and a scheduler's
// keys have no strider option; any other key fails the test, so a new PyTorch option is noticed.
inline optim::GroupOptions options_from_pytorch(const nlohmann::json& dict) {
  static const std::set<std::string> not_options = {"params",     "foreach",     "capturable",   "differentiable",
                                                    "fused",      "initial_lr",  "max_lr",       "min_lr",
                                                    "max_momentum", "base_momentum"};
  optim::GroupOptions o;
  for (auto& [key, v] : dict.items()) {
    if (key == "lr") o.lr = v.get<double>();
    else if (key == "momentum") o.momentum = v.get<double>();
    else if (key == "dampening") o.dampening = v.get<double>();
    else if (key == "weight_decay") o.weight_decay = v.get<double>();
    else if (key == "eps") o.eps = v.get<double>();
    else if (key == "nesterov") o.nesterov = v.get<bool>();
    else if (key == "maximize") o.maximize = v.get<bool>();
    else if (key == "amsgrad") o.amsgrad = v.get<bool>();
    else if (key == "betas") o.beta1 = v.at(0).get<double>(), o.beta2 = v.at(1).get<double>();
    else if (!not_options.count(key)) ADD_FAILURE() << "PyTorch option '" << key << "' has no strider counterpart";
  }
  return o;
}

// PyTorch's optimizer.state_dict() (as the generator writes it) in strider's layout.
inline optim::OptimizerStateDict state_dict_from_pytorch(const nlohmann::json& sd) {
  optim::OptimizerStateDict d;
  for (auto& [index, entries] : sd.at("state").items())
    for (auto& [key, v] : entries.items())
      if (!v.is_null()) d.state[std::stoll(index)][key] = tensor_from_json(v);  // SGD's momentum_buffer: None
  for (const auto& g : sd.at("param_groups")) {
    optim::ParamGroupState pg;
    pg.params = g.at("params").get<std::vector<int64_t>>();
    pg.options = options_from_pytorch(g);
    if (g.contains("initial_lr")) pg.initial_lr = g.at("initial_lr").get<double>();
    d.param_groups.push_back(std::move(pg));
  }
  return d;
}

// "SGD" -> "sgd": PyTorch's class names to make_optimizer's.
inline std::string optimizer_name(const std::string& pytorch_class) {
  if (pytorch_class == "SGD") return "sgd";
  if (pytorch_class == "Adam") return "adam";
  if (pytorch_class == "AdamW") return "adamw";
  ADD_FAILURE() << "no strider optimizer for " << pytorch_class;
  return "";
}

}  // namespace strider::testing
