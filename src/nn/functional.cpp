// Dropout, layer/group norm and embedding, composed from differentiable ops; embedding is an
// indexing op with its own backward. The losses are in losses.cpp and class_losses.cpp.
#include "strider/nn/functional.h"

#include <cmath>
#include <cstring>

#include "strider/autograd/grad_mode.h"
#include "strider/autograd/record.h"
#include "strider/core/dispatch.h"
#include "strider/ops/factory.h"
#include "strider/ops/norm.h"

namespace strider::nn::functional {

Tensor dropout(const Tensor& input, double p, bool training, Generator* gen) {
  STRIDER_CHECK(p >= 0 && p <= 1, "dropout", "probability has to be between 0 and 1, but got ", p);
  // PyTorch's _dropout_impl returns the input itself, before any arithmetic, for these three; an
  // empty input must too, or it would take input * mask's strides (an empty channels-last
  // tensor times another is contiguous).
  if (!training || p == 0 || input.numel() == 0) return input;
  if (p == 1) return input * 0.0;
  Tensor mask;
  {
    autograd::NoGradGuard g;
    mask = ge(rand_like(input, MemoryFormat::Preserve, gen), p).to(input.dtype()) * (1.0 / (1.0 - p));
  }
  return input * mask;
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  STRIDER_CHECK(k >= 1 && input.dim() >= k, "layer_norm", "normalized_shape ", normalized_shape,
                " does not fit input ", input.sizes());
  for (int64_t i = 0; i < k; ++i)
    STRIDER_CHECK(input.sizes()[input.dim() - k + i] == normalized_shape[i], "layer_norm", "expected input with "
                  "trailing shape ", normalized_shape, ", got ", input.sizes());
  for (const Tensor* p : {&weight, &bias})
    STRIDER_CHECK(!p->defined() || p->dtype() == input.dtype() ||
                      (p->dtype() == kFloat && (input.dtype() == kBFloat16 || input.dtype() == kHalf)),
                  "layer_norm", "expected weight and bias of the input's dtype ", input.dtype(),
                  " (or float32 for a 16-bit input), got ", p->dtype(), "; convert them with .to(", input.dtype(), ")");
  return layer_norm_trailing(input, product(normalized_shape), weight, bias, eps);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  STRIDER_CHECK(input.dim() >= 2, "group_norm", "expected input [N, C, ...], got ", input.sizes());
  const int64_t n = input.sizes()[0], c = input.sizes()[1];
  STRIDER_CHECK(num_groups > 0 && c % num_groups == 0, "group_norm", "expected number of channels ", c,
                " to be divisible by num_groups ", num_groups);
  const MemoryFormat fmt = input.suggest_memory_format();
  // The group's size spelled out: -1 cannot be inferred from an empty batch (PyTorch returns the
  // empty result).
  const int64_t group_size = c / num_groups * checked_numel(IntArrayRef(input.sizes().begin() + 2, input.sizes().size() - 2), "group_norm");
  Tensor x = input.contiguous().reshape({n, num_groups, group_size});
  Tensor y = (x - mean(x, {2}, true)) * rsqrt(var(x, {2}, 0, true) + eps);
  y = y.reshape(input.sizes());
  DimVector shape(input.dim(), 1);
  shape[1] = c;
  if (weight.defined()) y = y * weight.reshape(shape);
  if (bias.defined()) y = y + bias.reshape(shape);
  // Allocated in the input's suggested format with its formula strides (SPEC §11), size-1 dims too.
  return fmt == MemoryFormat::Contiguous ? y : y.to(fmt);
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  STRIDER_CHECK(indices.dtype() == kLong || indices.dtype() == kInt, "embedding",
                "expected int64 or int32 indices, got ", indices.dtype());
  STRIDER_CHECK(weight.dim() == 2, "embedding", "weight must be [num_embeddings, dim], got ", weight.sizes());
  const int64_t num = weight.sizes()[0], dim = weight.sizes()[1];
  Tensor idx = (indices.dtype() == kLong ? indices : indices.to(kLong)).contiguous();
  const int64_t count = idx.numel();
  const int64_t* ip = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i)
    STRIDER_CHECK(ip[i] >= 0 && ip[i] < num, "embedding", "index ", ip[i], " is out of range for ", num, " embeddings");
  DimVector out_shape = indices.sizes().vec();
  out_shape.push_back(dim);
  Tensor out = empty(out_shape, weight.dtype());
  {
    autograd::NoGradGuard g;
    Tensor w = weight.contiguous();
    const size_t row = static_cast<size_t>(dim) * w.element_size();
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(static_cast<char*>(out.data()) + i * row, static_cast<const char*>(w.data()) + ip[i] * row, row);
  }
  if (!autograd::any_requires_grad({&weight})) return out;
  autograd::SavedTensor si(idx);
  const ScalarType dt = weight.dtype();
  return autograd::record("EmbeddingBackward", {&weight}, out,
                          [=](const std::vector<Tensor>& g, const autograd::Node&) -> std::vector<Tensor> {
    Tensor grad = zeros({num, dim}, kDouble);
    Tensor go = g[0].to(kDouble, MemoryFormat::Contiguous, true);
    Tensor ii = si.unpack("embedding");
    const int64_t* p = ii.data_ptr<int64_t>();
    double* gp = grad.data_ptr<double>();
    const double* src = go.data_ptr<double>();
    for (int64_t i = 0; i < count; ++i)
      for (int64_t j = 0; j < dim; ++j) gp[p[i] * dim + j] += src[i * dim + j];
    return {grad.to(dt)};
  });
}

}  // namespace strider::nn::functional
