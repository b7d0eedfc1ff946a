// Class losses. nll_loss is an indexing op with its own backward (the gradient lands only on each
// kept item's target class, so an ignored item's is exactly 0 whatever the count); cross_entropy
// composes log_softmax, nll_loss and PyTorch 1.13's smoothing term, or, for class-probability
// targets, PyTorch's composite formula.
#include "nn/loss_utils.h"
#include "strider/autograd/grad_mode.h"
#include "strider/autograd/record.h"
#include "strider/core/dispatch.h"
#include "strider/ops/factory.h"

namespace strider::nn::functional {
namespace {

using detail::apply_reduction;
using detail::check_reduction;

// The target of a class-index loss must be [N] for input [N, C], and [N, d1, ..., dk] for
// [N, C, d1, ..., dk]: the same element count in another shape would pair items with the wrong
// pixels (PyTorch: "size mismatch").
void check_class_targets(const char* op, const Tensor& input, const Tensor& target) {
  STRIDER_CHECK(target.dtype() == kLong, op, "expected int64 class indices as targets, got ", target.dtype(),
                " (class-probability targets, for cross_entropy, have the input's shape ", input.sizes(), ")");
  DimVector expected = {input.sizes()[0]};
  for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.sizes()[d]);
  STRIDER_CHECK(target.sizes() == IntArrayRef(expected), op, "input ", input.sizes(), " needs a target of shape ",
                IntArrayRef(expected), " (the input's sizes without the class dim 1), got ", target.sizes());
}

void check_class_weight(const char* op, const Tensor& weight, const Tensor& input) {
  if (!weight.defined()) return;
  const int64_t c = input.sizes()[1];
  STRIDER_CHECK(weight.dim() == 1 && weight.numel() == c, op, "weight tensor should be defined either for all ", c,
                " classes or no classes but got weight tensor of shape: ", weight.sizes());
  detail::check_weight(op, "weight", weight, input);
}

// weight [C] viewed as [1, C, 1, ...] to broadcast over input's class dim.
Tensor class_weight_view(const Tensor& weight, const Tensor& input) {
  DimVector shape(input.dim(), 1);
  shape[1] = weight.numel();
  return weight.reshape(shape);
}

// -weight[t] * lp[i, t] per item (0 for ignored targets) and the kept targets' total weight.
Tensor pick(const char* op, const Tensor& lp, const Tensor& target, const Tensor& weight, int64_t ignore_index,
            double& total_weight) {
  const int64_t n = lp.sizes()[0], c = lp.sizes()[1];
  Tensor out = empty({n}, lp.dtype());
  Tensor t = target.contiguous();
  Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  const int64_t* tp = t.data_ptr<int64_t>();
  total_weight = 0;
  dispatch_floating(lp.dtype(), op, [&]<class T>() {
    using M = opmath_t<T>;
    const T* p = static_cast<const T*>(lp.data());
    const T* wp = w.defined() ? static_cast<const T*>(w.data()) : nullptr;
    T* o = out.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = tp[i];
      if (k == ignore_index) {
        o[i] = T(0.0f);
        continue;
      }
      STRIDER_CHECK(k >= 0 && k < c, op, "target ", k, " is out of bounds for ", c, " classes (item ", i,
                    "; ignore_index is ", ignore_index, ")");
      const M wk = wp ? static_cast<M>(wp[k]) : M(1);
      total_weight += static_cast<double>(wk);
      o[i] = static_cast<T>(-wk * static_cast<M>(p[i * lp.strides()[0] + k * lp.strides()[1]]));
    }
  });
  return out;
}

// nll_loss over [N, C, d...] log-probabilities (checked), its errors naming `op`; `total_weight`
// receives the Mean's divisor.
Tensor nll_nd(const char* op, const Tensor& log_probs, const Tensor& target, const Tensor& weight,
              Reduction reduction, int64_t ignore_index, double& total_weight) {
  Tensor lp = log_probs, tg = target;
  if (lp.dim() > 2) {  // [N, C, d...] -> [N*d..., C]
    DimVector perm = {0};
    for (int64_t d = 2; d < lp.dim(); ++d) perm.push_back(d);
    perm.push_back(1);
    lp = lp.permute(perm).reshape({-1, log_probs.sizes()[1]});
    tg = tg.reshape({-1});
  }
  Tensor per_item;
  {
    autograd::NoGradGuard g;
    per_item = pick(op, lp, tg, weight, ignore_index, total_weight);
  }
  if (autograd::any_requires_grad({&lp})) {
    autograd::SavedTensor st(tg);
    const bool weighted = weight.defined();
    autograd::SavedTensor sw(weighted ? weight : tg);
    const DimVector shape = lp.sizes().vec();
    const ScalarType dt = lp.dtype();
    per_item = autograd::record("NllLossBackward", {&lp}, per_item,
                                [=](const std::vector<Tensor>& g, const autograd::Node&) -> std::vector<Tensor> {
      Tensor grad = zeros(shape, dt);
      Tensor t = st.unpack("nll_loss").contiguous();
      Tensor w = weighted ? sw.unpack("nll_loss").contiguous() : Tensor();
      Tensor go = g[0].to(dt).contiguous();
      const int64_t* tp = t.data_ptr<int64_t>();
      dispatch_floating(dt, "nll_loss", [&]<class T>() {
        using M = opmath_t<T>;
        T* gp = grad.data_ptr<T>();
        const T* gop = go.data_ptr<T>();
        const T* wp = weighted ? w.data_ptr<T>() : nullptr;
        for (int64_t i = 0; i < shape[0]; ++i) {
          if (tp[i] == ignore_index) continue;
          const M wk = wp ? static_cast<M>(wp[tp[i]]) : M(1);
          gp[i * shape[1] + tp[i]] = static_cast<T>(-static_cast<M>(gop[i]) * wk);
        }
      });
      return {grad};
    });
  }
  if (reduction == Reduction::Mean) return sum(per_item) / total_weight;  // 0 / 0 = NaN with every target ignored
  if (reduction == Reduction::None && log_probs.dim() > 2) return per_item.reshape(target.sizes());
  return apply_reduction(per_item, reduction);
}

// nll_loss's checks and the unbatched [C] input with a 0-d target.
Tensor nll_checked(const char* op, const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                   Reduction reduction, int64_t ignore_index, double& total_weight) {
  check_reduction(op, reduction);
  STRIDER_CHECK(log_probs.dim() >= 1, op, "expected input [N, C, ...] or [C], got ", log_probs.sizes());
  if (log_probs.dim() == 1) {
    STRIDER_CHECK(target.dim() == 0, op, "an unbatched input ", log_probs.sizes(), " needs a 0-d target, got ",
                  target.sizes());
    Tensor out = nll_checked(op, log_probs.unsqueeze(0), target.unsqueeze(0), weight, reduction, ignore_index,
                             total_weight);
    return reduction == Reduction::None ? out.reshape({}) : out;
  }
  check_class_targets(op, log_probs, target);
  check_class_weight(op, weight, log_probs);
  return nll_nd(op, log_probs, target, weight, reduction, ignore_index, total_weight);
}

// PyTorch's cross_entropy_loss_label_smoothing: (1 - e) nll + e / C * smooth, smooth the sum over
// classes of -w[c] log p_c per kept item, reduced like nll. Ignored items are selected away (never
// multiplied by a 0/1 mask: with every target ignored the Mean's gradient is 1/0).
Tensor smoothed(const Tensor& lp, const Tensor& target, const CrossEntropyOptions& o) {
  double total_weight = 0;
  Tensor nll = nll_checked("cross_entropy", lp, target, o.weight, o.reduction, o.ignore_index, total_weight);
  if (o.label_smoothing == 0) return nll;
  Tensor per_class = o.weight.defined() ? lp * class_weight_view(o.weight, lp) : lp;
  Tensor smooth = neg(sum(per_class, {1}));
  Tensor keep;
  {
    autograd::NoGradGuard g;
    keep = ne(target, o.ignore_index);
  }
  smooth = where(keep, smooth, Scalar(0.0));
  if (o.reduction == Reduction::Mean) smooth = sum(smooth) / total_weight;
  if (o.reduction == Reduction::Sum) smooth = sum(smooth);
  return nll * (1.0 - o.label_smoothing) + smooth * (o.label_smoothing / static_cast<double>(lp.sizes()[1]));
}

// PyTorch's cross_entropy_loss_prob_target: -sum(log p * t' * w) with t' = t (1 - e) + e / C;
// Mean divides by the number of items (NaN for none).
Tensor with_probabilities(const Tensor& lp, const Tensor& target, const CrossEntropyOptions& o) {
  const char* op = "cross_entropy";
  STRIDER_CHECK(is_floating_point(target.dtype()), op, "expected a floating-point target for class probabilities "
                "(a target of the input's shape ", lp.sizes(), "), got ", target.dtype());
  STRIDER_CHECK(o.ignore_index < 0, op, "ignore_index is not supported for class-probability targets, got ",
                o.ignore_index, " (PyTorch refuses it too); leave it at -100");
  check_class_weight(op, o.weight, lp);
  const int64_t c = lp.sizes()[1];
  Tensor t = o.label_smoothing > 0 ? target * (1.0 - o.label_smoothing) + o.label_smoothing / static_cast<double>(c)
                                   : target;
  Tensor prod = lp * t;
  if (o.weight.defined()) prod = prod * class_weight_view(o.weight, lp);
  if (o.reduction == Reduction::None) return neg(sum(prod, {1}));
  Tensor total = neg(sum(prod));
  if (o.reduction == Reduction::Sum) return total;
  return total / static_cast<double>(c == 0 ? 0 : lp.numel() / c);
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NllLossOptions& options) {
  double total_weight = 0;
  return nll_checked("nll_loss", log_probs, target, options.weight, options.reduction, options.ignore_index,
                     total_weight);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction, int64_t ignore_index) {
  return nll_loss(log_probs, target, NllLossOptions{.ignore_index = ignore_index, .reduction = reduction});
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& options) {
  const char* op = "cross_entropy";
  check_reduction(op, options.reduction);
  STRIDER_CHECK(options.label_smoothing >= 0 && options.label_smoothing <= 1, op,
                "label_smoothing must be between 0.0 and 1.0, got ", options.label_smoothing);
  STRIDER_CHECK(input.dim() >= 1, op, "expected input [N, C, ...] or unbatched [C], got ", input.sizes());
  const bool probabilities = target.sizes() == input.sizes();
  if (input.dim() == 1) {  // unbatched: the class dim is 0
    STRIDER_CHECK(probabilities || target.dim() == 0, op, "an unbatched input ", input.sizes(),
                  " needs a 0-d class index or class probabilities of its shape, got a target of shape ",
                  target.sizes());
    Tensor out = cross_entropy(input.unsqueeze(0), target.unsqueeze(0), options);
    return options.reduction == Reduction::None ? out.reshape({}) : out;
  }
  Tensor lp = log_softmax(input, 1);
  return probabilities ? with_probabilities(lp, target, options) : smoothed(lp, target, options);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction, double label_smoothing,
                     int64_t ignore_index) {
  return cross_entropy(logits, target,
                       CrossEntropyOptions{.ignore_index = ignore_index, .reduction = reduction,
                                           .label_smoothing = label_smoothing});
}

}  // namespace strider::nn::functional
