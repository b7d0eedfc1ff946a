#include "strider/nn/containers.h"

namespace strider::nn {
namespace {

std::shared_ptr<Module> child_at(const Module& m, size_t i) {
  auto children = m.named_children();
  STRIDER_CHECK(i < children.size(), m.type_name().c_str(), "index ", i, " is out of range for ", children.size(),
                " modules");
  return children[i].second;
}

}  // namespace

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (auto& m : modules) push_back(m);
}
void Sequential::push_back(std::shared_ptr<Module> m) { add_child(std::to_string(size()), std::move(m)); }
Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& [name, m] : named_children()) y = (*m)(y);
  return y;
}
std::shared_ptr<Module> Sequential::operator[](size_t i) const { return child_at(*this, i); }

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) : Module("ModuleList") {
  for (auto& m : modules) push_back(m);
}
void ModuleList::push_back(std::shared_ptr<Module> m) { add_child(std::to_string(size()), std::move(m)); }
std::shared_ptr<Module> ModuleList::operator[](size_t i) const { return child_at(*this, i); }

ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules)
    : Module("ModuleDict") {
  for (auto& [key, m] : modules) insert(key, m);
}
void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> m) { add_child(key, std::move(m)); }
bool ModuleDict::contains(const std::string& key) const {
  for (auto& [name, m] : named_children())
    if (name == key) return true;
  return false;
}
std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (auto& [name, m] : named_children()) out.push_back(name);
  return out;
}
std::shared_ptr<Module> ModuleDict::operator[](const std::string& key) const {
  for (auto& [name, m] : named_children())
    if (name == key) return m;
  std::string known;
  for (const std::string& k : keys()) known += (known.empty() ? "" : ", ") + k;
  STRIDER_CHECK(false, "ModuleDict", "no module under key '", key, "' (keys: ", known.empty() ? "none" : known, ")");
  return nullptr;
}

}  // namespace strider::nn
