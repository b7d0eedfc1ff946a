// Losses, dropout, layer/group norm and embedding, composed from differentiable ops; nll_loss and
// embedding are indexing ops with their own backward.
#include "strider/nn/functional.h"

#include <cmath>
#include <cstring>

#include "strider/autograd/grad_mode.h"
#include "strider/autograd/record.h"
#include "strider/core/dispatch.h"
#include "strider/ops/factory.h"
#include "strider/ops/norm.h"

namespace strider::nn::functional {
namespace {

Tensor reduce(const Tensor& per_item, Reduction r) {
  switch (r) {
    case Reduction::Mean: return mean(per_item);
    case Reduction::Sum: return sum(per_item);
    case Reduction::None: return per_item;
  }
  return per_item;
}

// The target of a class-index loss must be [N] for input [N, C], and [N, d1, ..., dk] for
// [N, C, d1, ..., dk]: the same element count in another shape would pair items with the wrong
// pixels (PyTorch: "size mismatch").
void check_class_targets(const char* op, const Tensor& input, const Tensor& target) {
  STRIDER_CHECK(target.dtype() == kLong, op, "expected int64 class indices as targets, got ", target.dtype(),
                " (class-probability targets are not offered)");
  DimVector expected = {input.sizes()[0]};
  for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.sizes()[d]);
  STRIDER_CHECK(target.sizes() == IntArrayRef(expected), op, "input ", input.sizes(), " needs a target of shape ",
                IntArrayRef(expected), " (the input's sizes without the class dim 1), got ", target.sizes());
}

// Gathers -log_probs[i, target[i]] (0 for ignored targets) into a [N] tensor.
Tensor pick(const char* op, const Tensor& lp, const Tensor& target, int64_t ignore_index) {
  const int64_t n = lp.sizes()[0], c = lp.sizes()[1];
  Tensor out = empty({n}, lp.dtype());
  Tensor t = target.contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  dispatch_floating(lp.dtype(), op, [&]<class T>() {
    const T* p = static_cast<const T*>(lp.data());
    T* o = out.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = tp[i];
      if (k == ignore_index) {
        o[i] = T(0.0f);
        continue;
      }
      STRIDER_CHECK(k >= 0 && k < c, op, "target ", k, " is out of bounds for ", c, " classes (row ", i, ")");
      o[i] = static_cast<T>(-static_cast<opmath_t<T>>(p[i * lp.strides()[0] + k * lp.strides()[1]]));
    }
  });
  return out;
}

// nll_loss, its errors naming `op` (cross_entropy calls it on its log-softmax).
Tensor nll_loss_named(const char* op, const Tensor& log_probs, const Tensor& target, Reduction reduction,
                      int64_t ignore_index) {
  STRIDER_CHECK(log_probs.dim() >= 2, op, "expected input [N, C, ...], got ", log_probs.sizes());
  check_class_targets(op, log_probs, target);
  Tensor lp = log_probs, tg = target;
  if (lp.dim() > 2) {
    // [N, C, d...] -> [N*d..., C]
    DimVector perm = {0};
    for (int64_t d = 2; d < lp.dim(); ++d) perm.push_back(d);
    perm.push_back(1);
    lp = lp.permute(perm).reshape({-1, log_probs.sizes()[1]});
    tg = tg.reshape({-1});
  }
  Tensor per_item;
  {
    autograd::NoGradGuard g;
    per_item = pick(op, lp, tg, ignore_index);
  }
  Tensor valid;
  {
    autograd::NoGradGuard g;
    valid = ne(tg, ignore_index).to(lp.dtype());
  }
  if (autograd::any_requires_grad({&lp})) {
    autograd::SavedTensor st(tg);
    const DimVector shape = lp.sizes().vec();
    const ScalarType dt = lp.dtype();
    per_item = autograd::record("NllLossBackward", {&lp}, per_item,
                                [=](const std::vector<Tensor>& g, const autograd::Node&) -> std::vector<Tensor> {
      Tensor grad = zeros(shape, dt);
      Tensor t = st.unpack("nll_loss").contiguous();
      Tensor go = g[0].to(dt).contiguous();
      const int64_t* tp = t.data_ptr<int64_t>();
      dispatch_floating(dt, "nll_loss", [&]<class T>() {
        T* gp = grad.data_ptr<T>();
        const T* gop = go.data_ptr<T>();
        for (int64_t i = 0; i < shape[0]; ++i)
          if (tp[i] != ignore_index) gp[i * shape[1] + tp[i]] = static_cast<T>(-static_cast<opmath_t<T>>(gop[i]));
      });
      return {grad};
    });
  }
  if (reduction == Reduction::Mean) return sum(per_item) / sum(valid).item<double>();
  if (reduction == Reduction::None && log_probs.dim() > 2) {
    DimVector out_shape = {log_probs.sizes()[0]};
    for (int64_t d = 2; d < log_probs.dim(); ++d) out_shape.push_back(log_probs.sizes()[d]);
    return per_item.reshape(out_shape);
  }
  return reduce(per_item, reduction);
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction, int64_t ignore_index) {
  return nll_loss_named("nll_loss", log_probs, target, reduction, ignore_index);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction, double label_smoothing,
                     int64_t ignore_index) {
  STRIDER_CHECK(logits.dim() >= 2, "cross_entropy", "expected logits [N, C, ...], got ", logits.sizes());
  STRIDER_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "cross_entropy", "label_smoothing must be in [0, 1], got ",
                label_smoothing);
  check_class_targets("cross_entropy", logits, target);
  Tensor lp = log_softmax(logits, 1);
  Tensor nll = nll_loss_named("cross_entropy", lp, target, reduction, ignore_index);
  if (label_smoothing == 0) return nll;
  // Smoothed: (1 - eps) * nll + eps * mean over classes of -log p (over non-ignored items).
  Tensor uniform = neg(mean(lp, {1}));
  Tensor keep;
  {
    autograd::NoGradGuard g;
    keep = ne(target, ignore_index);
  }
  // Ignored items are selected away (PyTorch's masked_fill_), never multiplied by a 0/1 mask: with
  // every target ignored the mean's gradient is 1/0 = inf, and inf * 0 gave NaN gradients where
  // PyTorch's are 0.
  Tensor smooth_items = where(keep, uniform, Scalar(0.0));
  Tensor smooth = reduction == Reduction::Mean ? sum(smooth_items) / sum(keep).item<double>()
                                               : reduce(smooth_items, reduction);
  return nll * (1.0 - label_smoothing) + smooth * label_smoothing;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  STRIDER_CHECK(input.sizes() == target.sizes(), "mse_loss", "input ", input.sizes(), " and target ",
                target.sizes(), " must have the same shape");
  Tensor d = input - target;
  return reduce(d * d, reduction);
}

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
