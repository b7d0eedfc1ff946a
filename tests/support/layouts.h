#pragma once
// Test inputs in every layout a kernel must handle: the same logical values stored contiguous,
// channels-last, transposed, sliced (non-dense) and broadcast (stride 0).
#include <string>
#include <vector>

#include <strider/strider.h>

namespace strider::testing {

struct LayoutCase {
  std::string name;
  Tensor tensor;
};

// Deterministic values in [-2, 2) of the given dtype and shape (contiguous).
inline Tensor sample(IntArrayRef shape, ScalarType dtype, uint64_t seed = 1) {
  Generator g(seed);
  Tensor t = rand(shape, kDouble, &g) * 4.0 - 2.0;
  return t.to(dtype);
}

// The same logical 4-d tensor in several layouts.
inline std::vector<LayoutCase> layouts_4d(IntArrayRef shape, ScalarType dtype, uint64_t seed = 1) {
  Tensor base = sample(shape, dtype, seed);
  std::vector<LayoutCase> out;
  out.push_back({"contiguous", base});
  out.push_back({"channels_last", base.to(MemoryFormat::ChannelsLast)});
  out.push_back({"hw_transposed", base.transpose(2, 3).contiguous().transpose(2, 3)});
  // Non-dense: a channels-last tensor twice as wide, sliced every other column.
  DimVector wide = shape.vec();
  wide[3] *= 2;
  Tensor big = empty(wide, TensorOptions(dtype).memory_format(MemoryFormat::ChannelsLast));
  Tensor sliced = big.slice(3, 0, std::nullopt, 2);
  sliced.copy_(base);
  out.push_back({"cl_sliced", sliced});
  // Broadcast: one image expanded over the batch.
  Tensor one = base.narrow(0, 0, 1).contiguous();
  out.push_back({"batch_expanded", one.expand(shape)});
  return out;
}

}  // namespace strider::testing
