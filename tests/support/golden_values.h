#pragma once
// Tensors from golden values written into a test, and the input the PyTorch-generated goldens of
// the autograd tests were computed from.
#include <algorithm>
#include <cmath>
#include <vector>

#include <strider/strider.h>

namespace strider::testing {

// `values` (float64) as a tensor of `shape`, converted to `dtype`.
inline Tensor from_values(const std::vector<double>& values, IntArrayRef shape, ScalarType dtype = kDouble) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, kDouble);
  std::copy(values.begin(), values.end(), static_cast<double*>(t.data()));
  return t.reshape(shape).to(dtype);
}

// sin(0.37 * arange(24)).reshape(2, 3, 4) in float64: no two elements equal, none zero but the first.
inline Tensor sine_input() {
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * static_cast<double>(i));
  return from_values(v, {2, 3, 4});
}

}  // namespace strider::testing
