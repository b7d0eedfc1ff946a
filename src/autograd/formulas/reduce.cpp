// Differentiable reductions and softmax.
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/ops/softmax.h"

namespace strider {

using autograd::InputGeometry;
using autograd::reduced_count;
using autograd::reduced_dims;
using autograd::unsqueeze_reduced;
using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// d prod / dx_i = product of the others: prod / x_i where x_i != 0; with one zero in the slice,
// the product of the rest at that zero; with two or more, 0.
Tensor prod_backward(const Tensor& g, const Tensor& x, IntArrayRef dims, IntArrayRef sizes) {
  Tensor is_zero = ops::eq(x, 0);
  Tensor x_nz = ops::where(is_zero, Scalar(1.0), x);
  Tensor p_nz = ops::prod(x_nz, dims, true);
  Tensor zeros = ops::sum(is_zero, dims, true);
  Tensor full = ops::div(p_nz, x_nz);  // == prod/x_i when no zeros
  Tensor with_zero = ops::where(ops::eq(zeros, 1), p_nz, Scalar(0.0));
  Tensor none_zero = ops::where(ops::eq(zeros, 0), full, Scalar(0.0));
  Tensor d = ops::where(is_zero, ops::expand(with_zero, sizes), none_zero);
  return ops::mul(d, ops::expand(g, sizes));
}

// amax/amin/max()/min(): the gradient goes to every extremal element, split evenly among ties.
Tensor extremum_backward(const Tensor& g, const Tensor& x, const Tensor& y, IntArrayRef dims) {
  Tensor hit = ops::to(ops::eq(x, y), g.dtype());
  Tensor count = ops::sum(hit, dims, true);
  return ops::mul(hit, ops::div(g, count));
}

enum class Saves { NoGrad, Shapes, Input, InputOutput };

// A row's gradient (its last column) as a function of what the backward kept.
struct ReductionGrad {
  Tensor g, x, y;          // y and g with the reduced dims put back
  DimVector sizes, dims;   // the input's sizes; the dims as given
  ScalarType dtype;        // the input's
  double n;                // elements per output
  int64_t correction;      // Correction rows' argument
};
#define STRIDER_REDUCE_GRADIENT(Enum, function, name, signature, rule, empty, accumulate, result, saves, gradient) \
  STRIDER_REDUCE_GRADIENT_##saves(Enum, gradient)
#define STRIDER_REDUCE_GRADIENT_NoGrad(Enum, gradient)
#define STRIDER_REDUCE_GRADIENT_Shapes(Enum, gradient)                                                        \
  Tensor Enum##_gradient(const ReductionGrad& c) {                                                         \
    [[maybe_unused]] const Tensor &g = c.g, &x = c.x, &y = c.y;                                            \
    [[maybe_unused]] IntArrayRef sizes = c.sizes, dims = c.dims;                                           \
    [[maybe_unused]] const ScalarType dtype = c.dtype;                                                     \
    [[maybe_unused]] const double n = c.n;                                                                 \
    [[maybe_unused]] const int64_t correction = c.correction;                                              \
    return gradient;                                                                                       \
  }
#define STRIDER_REDUCE_GRADIENT_Input(Enum, gradient) STRIDER_REDUCE_GRADIENT_Shapes(Enum, gradient)
#define STRIDER_REDUCE_GRADIENT_InputOutput(Enum, gradient) STRIDER_REDUCE_GRADIENT_Shapes(Enum, gradient)
STRIDER_REDUCE_OPS(STRIDER_REDUCE_GRADIENT)

// Records a reduction of t over dims whose input gradient is gradient(what the backward kept).
Tensor record_reduction(const char* node, const Tensor& t, Tensor y, IntArrayRef dims, bool keepdim,
                        Saves saves, int64_t correction, Tensor (*gradient)(const ReductionGrad&)) {
  if (!autograd::any_requires_grad({&t})) return y;
  auto mask = reduced_dims(dims, t.dim());
  SavedTensor sx(saves == Saves::Input || saves == Saves::InputOutput ? t : Tensor());
  SavedTensor sy(saves == Saves::InputOutput ? y : Tensor());
  InputGeometry gi(t);
  DimVector dv = dims.vec();
  const double n = static_cast<double>(reduced_count(t.sizes(), mask));
  return record(node, {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor yk = sy.unpack(node);
    if (yk.defined()) yk = unsqueeze_reduced(yk, mask, keepdim);
    ReductionGrad c{unsqueeze_reduced(g[0], mask, keepdim), sx.unpack(node), yk, gi.sizes, dv, gi.dtype, n,
                    correction};
    return {gradient(c)};
  });
}

}  // namespace

// The table's rows (core/reduce_table.h), by signature; NoGrad rows only compute.
#define STRIDER_REDUCE_FUNCTION(Enum, function, name, signature, rule, empty, accumulate, result, saves, gradient) \
  STRIDER_REDUCE_DEFINE_##saves(Enum, function, signature, saves)
#define STRIDER_REDUCE_DEFINE_NoGrad(Enum, function, signature, saves) STRIDER_REDUCE_FORWARD_##signature(function)
#define STRIDER_REDUCE_DEFINE_Shapes(Enum, function, signature, saves) \
  STRIDER_REDUCE_RECORD_##signature(Enum, function, saves)
#define STRIDER_REDUCE_DEFINE_Input(Enum, function, signature, saves) \
  STRIDER_REDUCE_RECORD_##signature(Enum, function, saves)
#define STRIDER_REDUCE_DEFINE_InputOutput(Enum, function, signature, saves) \
  STRIDER_REDUCE_RECORD_##signature(Enum, function, saves)
#define STRIDER_REDUCE_RECORD_Dims(Enum, function, saves)                                          \
  Tensor function(const Tensor& t, IntArrayRef dims, bool keepdim) {                              \
    return record_reduction(#Enum "Backward", t, ops::function(t, dims, keepdim), dims, keepdim, \
                            Saves::saves, 0, &Enum##_gradient);                                  \
  }
#define STRIDER_REDUCE_RECORD_DimsDtype(Enum, function, saves)                                              \
  Tensor function(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {     \
    return record_reduction(#Enum "Backward", t, ops::function(t, dims, keepdim, dtype), dims, keepdim,  \
                            Saves::saves, 0, &Enum##_gradient);                                           \
  }
#define STRIDER_REDUCE_RECORD_Correction(Enum, function, saves)                                               \
  Tensor function(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {                    \
    return record_reduction(#Enum "Backward", t, ops::function(t, dims, correction, keepdim), dims, keepdim, \
                            Saves::saves, correction, &Enum##_gradient);                                     \
  }
#define STRIDER_REDUCE_FORWARD_Dims(function) \
  Tensor function(const Tensor& t, IntArrayRef dims, bool keepdim) { return ops::function(t, dims, keepdim); }
#define STRIDER_REDUCE_FORWARD_DimsDtype(function)                                                   \
  Tensor function(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) { \
    return ops::function(t, dims, keepdim, dtype);                                                   \
  }
#define STRIDER_REDUCE_FORWARD_Correction(function)                                       \
  Tensor function(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) { \
    return ops::function(t, dims, correction, keepdim);                                   \
  }
#define STRIDER_REDUCE_FORWARD_OptionalDim(function) \
  Tensor function(const Tensor& t, std::optional<int64_t> dim, bool keepdim) { return ops::function(t, dim, keepdim); }
STRIDER_REDUCE_OPS(STRIDER_REDUCE_FUNCTION)

// max and min over all elements, or along one dim with the index.
namespace {

// max() and min() of the whole tensor split the gradient evenly among the elements equal to the
// result, and among the NaNs when the result is NaN (PyTorch's evenly_distribute_backward;
// amax/amin compare with ==, so there a NaN result gives NaN gradients, as in PyTorch).
Tensor evenly_distributed(const ReductionGrad& c) {
  Tensor hit = ops::logical_or(ops::eq(c.x, c.y), ops::logical_and(ops::ne(c.x, c.x), ops::ne(c.y, c.y)));
  Tensor mask = ops::to(hit, c.g.dtype());
  return ops::mul(mask, ops::div(c.g, ops::sum(mask)));
}

}  // namespace

Tensor max(const Tensor& t) {
  return record_reduction("MaxBackward", t, ops::max(t), {}, false, Saves::InputOutput, 0, &evenly_distributed);
}
Tensor min(const Tensor& t) {
  return record_reduction("MinBackward", t, ops::min(t), {}, false, Saves::InputOutput, 0, &evenly_distributed);
}

namespace {

// max(dim)/min(dim): the gradient goes to the returned index.
std::pair<Tensor, Tensor> indexed_backward(const char* name, const Tensor& t,
                                           std::pair<Tensor, Tensor> r, int64_t dim, bool keepdim) {
  if (!autograd::any_requires_grad({&t})) return r;
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), name);
  SavedTensor si(r.second);
  InputGeometry gi(t);
  Tensor values = r.first;
  record(name, {&t}, {&values}, [=](const Grads& g, const Node&) -> Grads {
    if (gi.sizes.empty()) return {g[0]};
    Tensor idx = si.unpack(name);
    if (!keepdim) idx = ops::unsqueeze(idx, d);
    DimVector shape(gi.sizes.size(), 1);
    shape[d] = gi.sizes[d];
    Tensor positions = ops::reshape(arange(gi.sizes[d]), shape);
    Tensor hit = ops::eq(positions, idx);
    Tensor gk = keepdim ? g[0] : ops::unsqueeze(g[0], d);
    return {ops::where(hit, ops::expand(gk, gi.sizes), Scalar(0.0))};
  });
  return {values, r.second};
}

}  // namespace

std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  return indexed_backward("MaxBackward", t, ops::max(t, dim, keepdim), dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  return indexed_backward("MinBackward", t, ops::min(t, dim, keepdim), dim, keepdim);
}

Tensor softmax(const Tensor& t, int64_t dim) {
  Tensor y = ops::softmax(t, dim);
  if (!autograd::any_requires_grad({&t})) return y;
  SavedTensor sy(y);
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "softmax");
  InputGeometry gi(t);
  return record("SoftmaxBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor yy = sy.unpack("softmax");
    if (gi.sizes.empty()) return {ops::mul(g[0], 0.0)};
    Tensor dot = ops::sum(ops::mul(g[0], yy), {d}, true);
    return {ops::mul(yy, ops::sub(g[0], dot))};
  });
}

Tensor log_softmax(const Tensor& t, int64_t dim) {
  Tensor y = ops::log_softmax(t, dim);
  if (!autograd::any_requires_grad({&t})) return y;
  SavedTensor sy(y);
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "log_softmax");
  InputGeometry gi(t);
  return record("LogSoftmaxBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    if (gi.sizes.empty()) return {ops::mul(g[0], 0.0)};
    Tensor total = ops::sum(g[0], {d}, true);
    return {ops::sub(g[0], ops::mul(ops::exp(sy.unpack("log_softmax")), total))};
  });
}

}  // namespace strider
