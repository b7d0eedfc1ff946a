#pragma once
// Each optimizer's options as a small table (name -> member of its options struct), so applying a
// group's overrides, reading a group's options and naming a wrong one is written once, not once
// per optimizer and option.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strider/core/error.h"
#include "strider/optim/adam.h"
#include "strider/optim/param_group.h"
#include "strider/optim/sgd.h"

namespace strider::optim::detail {

template <class Options>
struct OptionTable {
  const char* optimizer;  // in messages: "SGD", "AdamW"
  std::vector<std::pair<const char*, double Options::*>> numbers;
  std::vector<std::pair<const char*, bool Options::*>> flags;

  std::string names() const {
    std::string s;
    for (auto& [n, m] : numbers) s += std::string(s.empty() ? "" : ", ") + n;
    for (auto& [n, m] : flags) s += std::string(s.empty() ? "" : ", ") + n;
    return s;
  }
};

// GroupOptions' fields by name.
inline const std::vector<std::pair<const char*, std::optional<double> GroupOptions::*>>& group_numbers() {
  static const std::vector<std::pair<const char*, std::optional<double> GroupOptions::*>> t = {
      {"lr", &GroupOptions::lr},       {"momentum", &GroupOptions::momentum},
      {"dampening", &GroupOptions::dampening}, {"weight_decay", &GroupOptions::weight_decay},
      {"beta1", &GroupOptions::beta1}, {"beta2", &GroupOptions::beta2},
      {"eps", &GroupOptions::eps}};
  return t;
}
inline const std::vector<std::pair<const char*, std::optional<bool> GroupOptions::*>>& group_flags() {
  static const std::vector<std::pair<const char*, std::optional<bool> GroupOptions::*>> t = {
      {"nesterov", &GroupOptions::nesterov}, {"maximize", &GroupOptions::maximize},
      {"amsgrad", &GroupOptions::amsgrad}};
  return t;
}

template <class Member, class Table>
Member find_member(const Table& table, const std::string& name) {
  for (auto& [n, m] : table)
    if (name == n) return m;
  return nullptr;
}

// `o` with every option `changes` sets; an option the optimizer does not have is an Error.
template <class Options>
Options apply(Options o, const GroupOptions& changes, const OptionTable<Options>& table, const std::string& where) {
  for (auto& [name, field] : group_numbers()) {
    if (!(changes.*field)) continue;
    auto member = find_member<double Options::*>(table.numbers, name);
    STRIDER_CHECK(member, table.optimizer, where, " sets '", name, "', which ", table.optimizer,
                  " does not have; its options are ", table.names());
    o.*member = *(changes.*field);
  }
  for (auto& [name, field] : group_flags()) {
    if (!(changes.*field)) continue;
    auto member = find_member<bool Options::*>(table.flags, name);
    STRIDER_CHECK(member, table.optimizer, where, " sets '", name, "', which ", table.optimizer,
                  " does not have; its options are ", table.names());
    o.*member = *(changes.*field);
  }
  return o;
}

// Every option of `o` as GroupOptions.
template <class Options>
GroupOptions to_group_options(const Options& o, const OptionTable<Options>& table) {
  GroupOptions g;
  for (auto& [name, field] : group_numbers())
    if (auto member = find_member<double Options::*>(table.numbers, name)) g.*field = o.*member;
  for (auto& [name, field] : group_flags())
    if (auto member = find_member<bool Options::*>(table.flags, name)) g.*field = o.*member;
  return g;
}

// The optimizers' tables (defined with each optimizer).
const OptionTable<SGDOptions>& sgd_option_table();
const OptionTable<AdamOptions>& adam_option_table(bool decoupled_weight_decay);

}  // namespace strider::optim::detail
