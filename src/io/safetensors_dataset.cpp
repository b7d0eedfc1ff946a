#include "strider/io/safetensors_dataset.h"

namespace strider::io {

SafetensorsDataset load_safetensors_dataset(const std::string& path, const std::vector<std::string>& fields) {
  constexpr const char* kOp = "load_safetensors_dataset";
  SafetensorsFile file = load_safetensors(path);
  STRIDER_CHECK(!file.tensors.empty(), kOp, path, " holds no tensors; a dataset needs at least one field");
  std::string available;
  for (const auto& [name, t] : file.tensors) available += (available.empty() ? "'" : ", '") + name + "'";
  SafetensorsDataset out;
  if (fields.empty()) {
    out.fields = std::move(file.tensors);
  } else {
    for (const std::string& name : fields) {
      auto it = file.tensors.find(name);
      STRIDER_CHECK(it != file.tensors.end(), kOp, path, " has no field '", name, "'; its fields are ", available);
      out.fields[name] = it->second;
    }
  }
  const std::string* first = nullptr;
  for (const auto& [name, t] : out.fields) {
    STRIDER_CHECK(t.dim() >= 1, kOp, path, ": field '", name,
                  "' is 0-d; every field needs a first dimension indexing the samples");
    if (first == nullptr) {
      first = &name;
      out.size = t.sizes()[0];
      continue;
    }
    STRIDER_CHECK(t.sizes()[0] == out.size, kOp, path, ": field '", name, "' has ", t.sizes()[0],
                  " samples (shape ", t.sizes(), ") but field '", *first, "' has ", out.size,
                  "; every field's first dimension must be the sample count");
  }
  return out;
}

}  // namespace strider::io
