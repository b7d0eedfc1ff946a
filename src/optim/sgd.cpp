#include "strider/optim/sgd.h"

#include <cmath>

#include "optim/option_table.h"
#include "strider/autograd/functions.h"

namespace strider::optim {

const detail::OptionTable<SGDOptions>& detail::sgd_option_table() {
  static const detail::OptionTable<SGDOptions> t{
      .optimizer = "SGD",
      .numbers = {{"lr", &SGDOptions::lr}, {"momentum", &SGDOptions::momentum},
                  {"dampening", &SGDOptions::dampening}, {"weight_decay", &SGDOptions::weight_decay}},
      .flags = {{"nesterov", &SGDOptions::nesterov}, {"maximize", &SGDOptions::maximize}}};
  return t;
}

namespace {

const detail::OptionTable<SGDOptions>& table() { return detail::sgd_option_table(); }

// PyTorch 1.13's checks, plus the required lr.
void check(const SGDOptions& o, const std::string& where) {
  STRIDER_CHECK(!std::isnan(o.lr), "SGD", where, " has no lr: SGD has no default learning rate (PyTorch 1.13's "
                "neither); pass {.lr = ...} to the optimizer or to every param group");
  STRIDER_CHECK(o.lr >= 0, "SGD", where, ": invalid learning rate ", o.lr, "; it must be >= 0");
  STRIDER_CHECK(o.momentum >= 0, "SGD", where, ": invalid momentum ", o.momentum, "; it must be >= 0");
  STRIDER_CHECK(o.weight_decay >= 0, "SGD", where, ": invalid weight_decay ", o.weight_decay, "; it must be >= 0");
  STRIDER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "SGD", where, ": nesterov momentum requires a "
                "momentum and zero dampening (got momentum ", o.momentum, ", dampening ", o.dampening, ")");
}

}  // namespace

SGD::SGD(NamedParameters params, SGDOptions options) : SGD(std::vector<ParamGroup>{{std::move(params), {}}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : defaults_(options) {
  add_param_groups(std::move(groups));
}

std::vector<std::string> SGD::state_keys(size_t group) const {
  if (groups_.at(group).momentum == 0) return {};
  return {"momentum_buffer"};
}

GroupOptions SGD::group_options(size_t g) const { return detail::to_group_options(groups_.at(g), table()); }

void SGD::append_group_options(const GroupOptions& overrides, const std::string& where) {
  SGDOptions o = detail::apply(defaults_, overrides, table(), where);
  check(o, where);
  groups_.push_back(o);
}

void SGD::change_group_options(size_t g, const GroupOptions& changes, const std::string& where, bool checked) {
  SGDOptions o = detail::apply(groups_.at(g), changes, table(), where);
  if (checked) check(o, where);
  groups_[g] = o;
}

void SGD::update(size_t index, Tensor& p, std::map<std::string, Tensor>& st) {
  const SGDOptions& o = groups_[group_of(index)];
  Tensor d = p.grad();
  if (d.dtype() != p.dtype()) d = d.to(p.dtype());
  if (o.maximize) d = neg(d);
  if (o.weight_decay != 0) d = add(d, p, o.weight_decay);
  if (o.momentum != 0) {
    auto it = st.find("momentum_buffer");
    if (it == st.end()) {
      st["momentum_buffer"] = d.clone();
    } else {
      mul_(it->second, o.momentum);
      add_(it->second, d, 1.0 - o.dampening);
    }
    Tensor& buf = st["momentum_buffer"];
    d = o.nesterov ? add(d, buf, o.momentum) : buf;
  }
  add_(p, d, -o.lr);
}

}  // namespace strider::optim
