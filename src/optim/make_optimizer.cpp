#include "strider/optim/make_optimizer.h"

#include <functional>

#include "optim/option_table.h"

namespace strider::optim {
namespace {

using Maker = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>, const GroupOptions&,
                                                       std::optional<ScalarType> state_dtype)>;

// The optimizer's options are its PyTorch defaults with `options` applied (as its constructor's
// arguments: a group added later starts from them too).
const std::vector<std::pair<std::string, Maker>>& table() {
  static const std::vector<std::pair<std::string, Maker>> t = {
      {"sgd",
       [](std::vector<ParamGroup> g, const GroupOptions& o, std::optional<ScalarType> state_dtype)
           -> std::unique_ptr<Optimizer> {
         STRIDER_CHECK(!state_dtype, "make_optimizer", "'sgd' keeps its momentum in the parameters' dtype; a state "
                       "dtype (", *state_dtype, ") is for 'adam' and 'adamw'");
         return std::make_unique<SGD>(std::move(g),
                                      detail::apply(SGDOptions{}, o, detail::sgd_option_table(), "the options"));
       }},
      {"adam",
       [](std::vector<ParamGroup> g, const GroupOptions& o, std::optional<ScalarType> state_dtype)
           -> std::unique_ptr<Optimizer> {
         AdamOptions a = detail::apply(AdamOptions{}, o, detail::adam_option_table(false), "the options");
         a.state_dtype = state_dtype;
         return std::make_unique<Adam>(std::move(g), a);
       }},
      {"adamw",
       [](std::vector<ParamGroup> g, const GroupOptions& o, std::optional<ScalarType> state_dtype)
           -> std::unique_ptr<Optimizer> {
         const AdamWOptions w;  // AdamW's defaults (weight_decay 0.01), through the Adam table
         AdamOptions d{.lr = w.lr, .beta1 = w.beta1, .beta2 = w.beta2, .eps = w.eps, .weight_decay = w.weight_decay,
                       .amsgrad = w.amsgrad, .maximize = w.maximize, .decoupled_weight_decay = true};
         d = detail::apply(d, o, detail::adam_option_table(true), "the options");
         return std::make_unique<AdamW>(std::move(g), AdamWOptions{.lr = d.lr, .beta1 = d.beta1, .beta2 = d.beta2,
                                                                   .eps = d.eps, .weight_decay = d.weight_decay,
                                                                   .amsgrad = d.amsgrad, .maximize = d.maximize,
                                                                   .state_dtype = state_dtype});
       }},
  };
  return t;
}

}  // namespace

std::vector<std::string> optimizer_names() {
  std::vector<std::string> out;
  for (auto& [name, maker] : table()) out.push_back(name);
  return out;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          const GroupOptions& options) {
  return make_optimizer(name, std::move(groups), options, std::nullopt);
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          const GroupOptions& options, std::optional<ScalarType> state_dtype) {
  std::string known;
  for (auto& [n, maker] : table()) {
    if (n == name) return maker(std::move(groups), options, state_dtype);
    known += (known.empty() ? "" : ", ") + n;
  }
  STRIDER_CHECK(false, "make_optimizer", "unknown optimizer '", name, "'; the optimizers are ", known);
  return nullptr;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, NamedParameters params, const GroupOptions& options) {
  return make_optimizer(name, std::vector<ParamGroup>{{std::move(params), {}}}, options);
}

}  // namespace strider::optim
