#pragma once
// The differentiable tensor API: the same functions as the raw ops in strider::ops (see
// ops/pointwise.h, ops/reduce.h, ops/softmax.h, ops/cat.h for their layout rules), recording
// the graph when an input requires grad. In-place forms refuse tensors autograd needs.
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "strider/core/pointwise_table.h"
#include "strider/core/reduce_table.h"
#include "strider/core/tensor.h"

namespace strider {

// ---- pointwise
// The rows of core/pointwise_table.h (dtype and argument rules: ops/pointwise.h). Comparisons,
// logical ops and logical_not record no gradient; every other row's function does.
STRIDER_UNARY_OPS(STRIDER_DECLARE_POINTWISE)
STRIDER_BINARY_OPS(STRIDER_DECLARE_POINTWISE)
Tensor rsub(const Tensor& a, const Scalar& b);  // b - a
Tensor rdiv(const Tensor& a, const Scalar& b);  // b / a as Python's: a.reciprocal() * b

// clamp(a, min_val, max_val) with hardtanh's gradient (0 at the bounds themselves); relu6 is
// hardtanh(a, 0, 6) (ops/pointwise.h).
Tensor hardtanh(const Tensor& a, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& a);

// True when both have the same shape and every element compares equal (torch.equal).
bool equal(const Tensor& a, const Tensor& b);

// cond ? x : y; cond must be bool. x and y promote to their common dtype.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);
Tensor where(const Tensor& cond, const Tensor& x, const Scalar& y);
Tensor where(const Tensor& cond, const Scalar& x, const Tensor& y);
// self + value * t1 * t2.
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
// A contiguous copy of self with `value` where mask (bool, broadcastable) is true.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);

// Writes a + alpha * b into `out`. An `out` of the right shape keeps its strides; any other is
// resized (restrided as the functional op would lay it out).
const Tensor& add_out(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);

// In place: self keeps its strides; the result type must be castable to self's dtype.
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& other);
const Tensor& mul_(const Tensor& self, const Scalar& other);
const Tensor& div_(const Tensor& self, const Tensor& other);
const Tensor& div_(const Tensor& self, const Scalar& other);
const Tensor& relu_(const Tensor& self);
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max);

// ---- reduce: the rows of core/reduce_table.h (dtype rules: ops/reduce.h). argmax and argmin
// record no gradient; max and min split it evenly among tied extremes (by index: to that one).
STRIDER_REDUCE_OPS(STRIDER_DECLARE_REDUCTION)
// Values and int64 indices of the maximum (minimum) along `dim`; ties give the first index.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
// The maximum (minimum) over all elements, 0-d.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);

// Standard deviation: sqrt(var) (contiguous, as every reduction); its gradient is 0 where the
// deviation is 0, as PyTorch's.
Tensor std(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
// log(sum(exp(t))) over dims, shifted by the maximum so it cannot overflow; integer inputs give
// float32. Over no elements: -inf.
Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim = false);
// The vector p-norm over dims (all when empty), as torch.linalg.vector_norm / torch.norm(t, p,
// dim): p = 2 (default), 1, 0 (the count of non-zeros), +-infinity (max/min of |t|) or any other
// p. Gradients follow PyTorch's norm_backward: 0 where the norm is 0 (p >= 1) and, for p < 1,
// at zero elements.
Tensor norm(const Tensor& t, double p = 2.0, IntArrayRef dims = {}, bool keepdim = false);

// ---- along one dimension (layouts and rules: ops/along_dim.h). The values are differentiable,
// their gradients going back to where each came from; indices record no gradient.
std::pair<Tensor, Tensor> sort(const Tensor& t, int64_t dim = -1, bool descending = false);
std::pair<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true);
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

// ---- softmax
Tensor softmax(const Tensor& t, int64_t dim);
Tensor log_softmax(const Tensor& t, int64_t dim);

// ---- cat
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// torch.split with an int: views of split_size along dim (the last may be shorter). One node
// for all pieces, so the backward writes one gradient buffer instead of summing a zero-padded
// tensor per piece.
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
// torch.chunk: `chunks` views of ceil(size / chunks) along dim (fewer when that covers the dim
// sooner: 5 elements in 3 chunks give 2, 2, 1; 6 in 4 give 2, 2, 2); a zero-size dim gives
// `chunks` empty views.
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);
// torch.unbind: the views t.select(dim, i) for every i.
std::vector<Tensor> unbind(const Tensor& t, int64_t dim = 0);

// ---- convolution (layout rule: ops/conv.h). Single-value stride/padding/dilation expand to all
// spatial dims; an unbatched input (no N) is accepted.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        IntArrayRef stride = {1}, IntArrayRef padding = {0},
                        IntArrayRef output_padding = {0}, int64_t groups = 1, IntArrayRef dilation = {1});
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        IntArrayRef stride = {1}, IntArrayRef padding = {0},
                        IntArrayRef output_padding = {0}, int64_t groups = 1, IntArrayRef dilation = {1});

// ---- normalization, pooling, linear algebra (layout rules: ops/norm.h, ops/pool.h, ops/linear.h)
// F.batch_norm's argument order. In training, running stats (when defined) are updated in place.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(...)) with the ReLU fused into the batch norm's passes, forward and backward.
Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                       double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(input, ...) + residual), fused the same way (a ResNet block's output); the
// residual has the input's shape and dtype.
Tensor batch_norm_add_relu(const Tensor& input, const Tensor& residual, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                           bool training = false, double momentum = 0.1, double eps = 1e-5);
// Normalizes over the trailing dims whose sizes multiply to n (any floating dtype).
Tensor layer_norm_trailing(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias, double eps);
// stride empty = kernel_size.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1}, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                  IntArrayRef stride = {}, IntArrayRef padding = {0},
                                                  IntArrayRef dilation = {1}, bool ceil_mode = false);
Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// softmax(scale * q k^T) v over q [B, H, L, D], k and v [B, H, S, D], causal or not, by the
// fused kernel (ops/attention.h); nn::functional::scaled_dot_product_attention picks it.
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal);
// Gathers slices along `dim` (index: 1-d int64 or int32); differentiable w.r.t. self.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);

}  // namespace strider
