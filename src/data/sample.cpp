#include "strider/data/sample.h"

#include "strider/core/error.h"

namespace strider::data {

const Tensor& Sample::at(const std::string& name) const {
  auto it = fields_.find(name);
  STRIDER_CHECK(it != fields_.end(), "Sample::at", "no field '", name, "'; the sample has fields [", names(),
                "]; check the field names the dataset gives");
  return it->second;
}

std::string Sample::names() const {
  std::string out;
  for (const auto& [name, t] : fields_) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace strider::data
