#include "strider/ops/index.h"

#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

const int64_t* checked_index(const Tensor& index, int64_t size, const char* op, Tensor& holder) {
  STRIDER_CHECK((index.dtype() == kLong || index.dtype() == kInt) && index.dim() <= 1, op,
                "index must be a 1-d int64 or int32 tensor, got ", index.sizes(), " ", index.dtype());
  holder = contiguous(index.dtype() == kLong ? index : to(index, kLong));
  const int64_t* p = holder.data_ptr<int64_t>();
  for (int64_t i = 0; i < holder.numel(); ++i)
    STRIDER_CHECK(p[i] >= 0 && p[i] < size, op, "index ", p[i], " is out of range for a dimension of size ", size);
  return p;
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = layout::wrap_dim(dim, self.dim(), "index_select");
  Tensor holder;
  const int64_t* idx = checked_index(index, self.sizes()[d], "index_select", holder);
  DimVector shape = self.sizes().vec();
  shape[d] = holder.numel();
  Tensor out = empty(shape, self.dtype());  // contiguous, as PyTorch's index_select
  for (int64_t i = 0; i < holder.numel(); ++i) copy_(select(out, d, i), select(self, d, idx[i]));
  return out;
}

Tensor index_add_into(IntArrayRef sizes, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = layout::wrap_dim(dim, static_cast<int64_t>(sizes.size()), "index_add");
  Tensor holder;
  const int64_t* idx = checked_index(index, sizes[d], "index_add", holder);
  DimVector want(sizes.begin(), sizes.end());
  want[static_cast<size_t>(d)] = holder.numel();
  STRIDER_CHECK(src.sizes() == IntArrayRef(want), "index_add", "source must be ", IntArrayRef(want), " (the output ",
                sizes, " with dim ", d, " the index's length ", holder.numel(), "), got ", src.sizes());
  Tensor out = zeros(sizes, src.dtype());
  for (int64_t i = 0; i < holder.numel(); ++i) add_(select(out, d, idx[i]), select(src, d, i));
  return out;
}

}  // namespace strider::ops
