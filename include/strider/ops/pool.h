#pragma once
// Pooling without autograd. Layout (SPEC §11): 2-d pooling of a 4-d input is allocated in the
// input's suggested format; unbatched (3-d) inputs and 3-d pooling give contiguous outputs.
// adaptive_avg_pool2d to 1x1 is a mean that stays channels-last for channels-last inputs.
#include <optional>

#include "strider/core/tensor.h"

namespace strider::ops {

struct PoolArgs {
  DimVector kernel{};
  DimVector stride{};          // empty = kernel
  DimVector padding{0};
  DimVector dilation{1};
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override{};
};

// What backward needs besides the gradient: oneDNN's workspace or reference indices.
struct PoolResult {
  Tensor out;
  Tensor indices;    // int64, max pooling by the reference kernel (and returned to users)
  Tensor workspace;  // oneDNN max pooling
  MemoryFormat compute_format = MemoryFormat::Contiguous;
};

// nsp = number of pooled dims (2 or 3); the input is [N, C, spatial...] or unbatched [C, spatial...].
PoolResult max_pool(const Tensor& input, int64_t nsp, const PoolArgs& args, bool with_indices = false);
PoolResult avg_pool(const Tensor& input, int64_t nsp, const PoolArgs& args);
Tensor pool_backward(const Tensor& grad_out, const Tensor& input, int64_t nsp, const PoolArgs& args,
                     const PoolResult& forward, bool is_max);

PoolResult adaptive_pool(const Tensor& input, IntArrayRef output_size, bool is_max);
Tensor adaptive_pool_backward(const Tensor& grad_out, const Tensor& input, IntArrayRef output_size,
                              const PoolResult& forward, bool is_max);

}  // namespace strider::ops
