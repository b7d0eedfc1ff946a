#pragma once
// Containers of modules, named as in PyTorch: Sequential (a chain of single-tensor modules),
// ModuleList (children "0", "1", ...) and ModuleDict (children under the keys given). Lists and
// dicts only hold; their owner decides how to call the modules (with any signature).
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strider/nn/module.h"

namespace strider::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  // Children are named "0", "1", ... as in PyTorch.
  void push_back(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return named_children().size(); }
  // Child i (an Error naming the size when out of range).
  std::shared_ptr<Module> operator[](size_t i) const;
};

class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> m);
  size_t size() const { return named_children().size(); }
  std::shared_ptr<Module> operator[](size_t i) const;
};

class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules);
  // Keys follow parameter naming (non-empty, no '.'); inserting a key twice is an Error.
  void insert(const std::string& key, std::shared_ptr<Module> m);
  size_t size() const { return named_children().size(); }
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;  // in insertion order
  // The module under `key` (an Error listing the keys when absent).
  std::shared_ptr<Module> operator[](const std::string& key) const;
};

}  // namespace strider::nn
