#include "strider/ops/along_dim.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "strider/core/dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

// t with `dim` moved last and made contiguous, so each line along dim is contiguous; a 0-d
// tensor is one line of one.
struct Lines {
  Tensor data;
  DimVector order;  // data's dims in t's numbering
  int64_t length = 1, count = 1;

  Lines(const Tensor& t, int64_t dim) {
    const Tensor t1 = t.dim() == 0 ? reshape(t, {1}) : t;
    for (int64_t k = 0; k < t1.dim(); ++k)
      if (k != dim) order.push_back(k);
    order.push_back(dim);
    data = contiguous(permute(t1, order));
    length = t1.sizes()[dim];
    count = length == 0 ? 0 : t1.numel() / length;
  }
  // A tensor laid out like `data` (lines along dim contiguous) seen in t's dim order.
  Tensor back(const Tensor& moved) const {
    DimVector inverse(order.size());
    for (size_t k = 0; k < order.size(); ++k) inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    return permute(moved, inverse);
  }
};

template <class T>
constexpr bool kFloatingLike = std::is_floating_point_v<T> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>;

template <class T>
auto key(T v) {
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) return static_cast<float>(v);
  else return v;
}

template <class T>
bool is_nan(T v) {
  if constexpr (kFloatingLike<T>) return std::isnan(key(v));
  else return false;
}

// PyTorch's order: NaN above every number (last ascending, first descending).
template <class T>
bool before(T a, T b, bool descending) {
  if (is_nan(a) || is_nan(b)) return descending ? is_nan(a) && !is_nan(b) : !is_nan(a) && is_nan(b);
  return descending ? key(a) > key(b) : key(a) < key(b);
}

// Sorts every line of `lines`, writing the first `keep` values and indices of each.
std::pair<Tensor, Tensor> sorted_lines(const Lines& lines, int64_t keep, bool descending, const char* op) {
  DimVector shape = lines.data.sizes().vec();
  shape.back() = keep;
  Tensor values = empty(shape, lines.data.dtype()), indices = empty(shape, kLong);
  dispatch_all(lines.data.dtype(), op, [&]<class T>() {
    const T* src = static_cast<const T*>(lines.data.data());
    T* dst = static_cast<T*>(values.data());
    int64_t* idx = indices.data_ptr<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(lines.length));
    for (int64_t l = 0; l < lines.count; ++l) {
      const T* line = src + l * lines.length;
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return before(line[a], line[b], descending); });
      for (int64_t j = 0; j < keep; ++j) {
        dst[l * keep + j] = line[order[static_cast<size_t>(j)]];
        idx[l * keep + j] = order[static_cast<size_t>(j)];
      }
    }
  });
  return {values, indices};
}

// The odometer over `sizes`: visits every coordinate in row-major order.
bool next_coordinate(DimVector& c, IntArrayRef sizes) {
  for (int64_t k = static_cast<int64_t>(sizes.size()) - 1; k >= 0; --k) {
    if (++c[static_cast<size_t>(k)] < sizes[k]) return true;
    c[static_cast<size_t>(k)] = 0;
  }
  return false;
}

// Checks gather's and scatter_add's index against the tensor it addresses (`target`) and, for
// scatter_add, the source; returns it contiguous.
Tensor checked_index(const char* op, const Tensor& target, int64_t dim, const Tensor& index, const Tensor* src) {
  STRIDER_CHECK(index.dtype() == kLong, op, "index must be int64, got ", index.dtype(),
                " (PyTorch: 'Expected dtype int64 for index'); convert it with .to(kLong)");
  const int64_t rank = std::max<int64_t>(target.dim(), 1);
  STRIDER_CHECK(std::max<int64_t>(index.dim(), 1) == rank, op, "index ", index.sizes(), " must have as many dims as ",
                target.sizes(), " (PyTorch: 'Index tensor must have the same number of dimensions as input tensor')");
  for (int64_t k = 0; k < index.dim(); ++k) {
    STRIDER_CHECK(k == dim || index.sizes()[k] <= target.sizes()[k], op, "index ", index.sizes(),
                  " is larger than ", target.sizes(), " in dim ", k, ", which is not the gathered dim ", dim);
    if (src)
      STRIDER_CHECK(index.sizes()[k] <= src->sizes()[k], op, "index ", index.sizes(), " is larger than the source ",
                    src->sizes(), " in dim ", k);
  }
  if (src) STRIDER_CHECK(src->dim() == index.dim(), op, "the source ", src->sizes(), " and index ", index.sizes(),
                         " must have the same number of dims");
  return contiguous(index);
}

// Calls f(i, offset in target, offset in src) for every element i of the index, the target's
// coordinate along dim taken from the index (checked against its size).
template <class F>
void for_each_indexed(const char* op, const Tensor& target, int64_t dim, const Tensor& index, const Tensor* src, F f) {
  const int64_t* idx = index.data_ptr<int64_t>();
  if (index.numel() == 0) return;
  const IntArrayRef sizes = index.sizes();
  DimVector c(sizes.size(), 0);
  const int64_t limit = target.dim() == 0 ? 1 : target.sizes()[dim];
  for (int64_t i = 0; i < index.numel(); ++i) {
    const int64_t v = idx[i];
    STRIDER_CHECK(v >= 0 && v < limit, op, "index ", v, " is out of range for dim ", dim, " of size ", limit);
    int64_t at = 0, from = 0;
    for (size_t k = 0; k < c.size(); ++k) {
      at += (static_cast<int64_t>(k) == dim ? v : c[k]) * target.strides()[k];
      if (src) from += c[k] * src->strides()[k];
    }
    f(i, at, from);
    next_coordinate(c, sizes);
  }
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending) {
  const int64_t d = layout::wrap_dim(dim, std::max<int64_t>(t.dim(), 1), "sort");
  const Lines lines(t, d);
  auto [v, i] = sorted_lines(lines, lines.length, descending, "sort");
  // PyTorch's sort keeps the input's memory format (its outputs are empty_like(self)).
  Tensor values = empty_like(t), indices = empty_like(t, kLong);
  if (t.dim() == 0) return {copy_(values, reshape(v, {})), copy_(indices, reshape(i, {}))};
  copy_(values, lines.back(v));
  copy_(indices, lines.back(i));
  return {values, indices};
}

std::pair<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim, bool largest) {
  const int64_t d = layout::wrap_dim(dim, std::max<int64_t>(t.dim(), 1), "topk");
  const int64_t n = t.dim() == 0 ? 1 : t.sizes()[d];
  STRIDER_CHECK(k >= 0 && k <= n, "topk", "k = ", k, " is out of range for dim ", d, " of size ", n,
                " (PyTorch: 'selected index k out of range')");
  STRIDER_CHECK(t.dtype() != kBool, "topk", "is not defined for bool tensors (PyTorch: '\"topk_cpu\" not "
                "implemented for 'Bool'); convert to an integer or float dtype first");
  if (t.dim() == 0) return {clone(t), zeros({}, kLong)};  // PyTorch: the value itself, for k 0 or 1
  const Lines lines(t, d);
  auto [v, i] = sorted_lines(lines, k, largest, "topk");
  return {contiguous(lines.back(v)), contiguous(lines.back(i))};
}

Tensor cumsum(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype, bool reverse) {
  const int64_t d = layout::wrap_dim(dim, std::max<int64_t>(t.dim(), 1), "cumsum");
  const ScalarType out_dtype = dtype.value_or(is_floating_point(t.dtype()) ? t.dtype() : kLong);
  const Lines lines(t.dtype() == out_dtype ? t : to(t, out_dtype), d);
  Tensor out = empty(lines.data.sizes(), out_dtype);
  dispatch_all(out_dtype, "cumsum", [&]<class T>() {
    using Acc = std::conditional_t<kFloatingLike<T>, double, int64_t>;
    const T* src = static_cast<const T*>(lines.data.data());
    T* dst = static_cast<T*>(out.data());
    for (int64_t l = 0; l < lines.count; ++l) {
      Acc acc = 0;
      for (int64_t j = 0; j < lines.length; ++j) {
        const int64_t at = l * lines.length + (reverse ? lines.length - 1 - j : j);
        acc += static_cast<Acc>(key(src[at]));
        dst[at] = static_cast<T>(acc);
      }
    }
  });
  if (t.dim() == 0) return reshape(out, {});
  return contiguous(lines.back(out));  // contiguous, as PyTorch's
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  const int64_t d = layout::wrap_dim(dim, std::max<int64_t>(t.dim(), 1), "gather");
  const Tensor idx = checked_index("gather", t, d, index, nullptr);
  Tensor out = empty(index.sizes(), t.dtype());  // contiguous, as PyTorch's
  dispatch_all(t.dtype(), "gather", [&]<class T>() {
    const T* src = static_cast<const T*>(t.data());
    T* dst = static_cast<T*>(out.data());
    for_each_indexed("gather", t, d, idx, nullptr, [&](int64_t i, int64_t at, int64_t) { dst[i] = src[at]; });
  });
  return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = layout::wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "scatter_add");
  STRIDER_CHECK(src.dtype() == self.dtype(), "scatter_add", "self is ", self.dtype(), " but the source is ",
                src.dtype(), " (PyTorch: 'Expected self.dtype to be equal to src.dtype')");
  const Tensor idx = checked_index("scatter_add", self, d, index, &src);
  Tensor out = clone(self, MemoryFormat::Contiguous);  // contiguous, as PyTorch's
  dispatch_all(self.dtype(), "scatter_add", [&]<class T>() {
    const T* from = static_cast<const T*>(src.data());
    T* dst = static_cast<T*>(out.data());
    for_each_indexed("scatter_add", out, d, idx, &src, [&](int64_t, int64_t at, int64_t s) {
      dst[at] = static_cast<T>(key(dst[at]) + key(from[s]));
    });
  });
  return out;
}

}  // namespace strider::ops
