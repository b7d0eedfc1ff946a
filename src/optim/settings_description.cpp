#include "strider/optim/settings_description.h"

#include <cstdio>
#include <optional>
#include <utility>

namespace strider::optim {

std::vector<std::string> describe_settings(const Optimizer& optimizer) {
  std::vector<std::string> lines{"optimizer " + optimizer.name(),
                                 "param groups " + std::to_string(optimizer.num_param_groups())};
  auto exact = [](double v) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", v);
    return std::string(text);
  };
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) {
    const GroupOptions o = optimizer.param_group_options(g);
    const std::string group = "group " + std::to_string(g) + " ";
    const std::pair<const char*, const std::optional<double>*> reals[] = {
        {"lr", &o.lr},       {"momentum", &o.momentum}, {"dampening", &o.dampening}, {"weight_decay", &o.weight_decay},
        {"beta1", &o.beta1}, {"beta2", &o.beta2},       {"eps", &o.eps}};
    for (const auto& r : reals)
      if (r.second->has_value()) lines.push_back(group + r.first + " " + exact(**r.second));
    const std::pair<const char*, const std::optional<bool>*> flags[] = {
        {"nesterov", &o.nesterov}, {"maximize", &o.maximize}, {"amsgrad", &o.amsgrad}};
    for (const auto& f : flags)
      if (f.second->has_value()) lines.push_back(group + f.first + (**f.second ? " true" : " false"));
  }
  return lines;
}

}  // namespace strider::optim
