#pragma once
// torch.nn.functional: the differentiable ops (re-exported from strider) plus losses, dropout
// and normalizations built from them.
#include <optional>
#include <string>

#include "strider/autograd/functions.h"
#include "strider/core/generator.h"

namespace strider::nn::functional {

using strider::adaptive_avg_pool2d;
using strider::adaptive_avg_pool3d;
using strider::adaptive_max_pool2d;
using strider::avg_pool2d;
using strider::avg_pool3d;
using strider::batch_norm;
using strider::batch_norm_add_relu;
using strider::batch_norm_relu;
using strider::conv1d;
using strider::conv2d;
using strider::conv3d;
using strider::conv_transpose2d;
using strider::conv_transpose3d;
using strider::gelu;
using strider::linear;
using strider::log_softmax;
using strider::max_pool2d;
using strider::max_pool3d;
using strider::relu;
using strider::sigmoid;
using strider::softmax;
using strider::tanh;
// Activations (PyTorch 1.13's defaults; `inplace` has no counterpart: they return new tensors).
using strider::elu;          // elu(x, alpha = 1)
using strider::hardsigmoid;  // relu6(x + 3) / 6
using strider::hardswish;    // x * relu6(x + 3) / 6
using strider::hardtanh;     // hardtanh(x, min_val = -1, max_val = 1)
using strider::leaky_relu;   // leaky_relu(x, negative_slope = 0.01)
using strider::mish;         // x * tanh(softplus(x))
using strider::relu6;
using strider::selu;
using strider::silu;
using strider::softplus;  // softplus(x, beta = 1, threshold = 20)

// Losses (src/nn/losses.cpp, src/nn/class_losses.cpp), with PyTorch 1.13's defaults, values and
// gradients. A Reduction is PyTorch's reduction string: Mean (over elements, or over the weights
// of the kept targets for class-index losses), Sum, None (the per-element or per-item loss), and
// BatchMean (sum / batch size), which only kl_div takes. Every loss throws a strider::Error naming
// itself for a bad shape, dtype, reduction or argument. Class weights and BCE weights are never
// differentiated (an input requiring grad is an Error, as in PyTorch) and must be >= 0 (strider's
// check: PyTorch takes negative weights). 16-bit inputs compute each element in float32.
enum class Reduction { Mean, Sum, None, BatchMean };

// Class-index losses: input [N, C], [N, C, d1, ..., dk] or unbatched [C]; int64 targets [N],
// [N, d1, ..., dk] or 0-d, each in [0, C) or ignore_index (contributes nothing; with every target
// ignored, Mean is NaN and the gradients 0). weight: [C], the input's dtype; the weighted Mean
// divides by the sum of the kept targets' weights.
struct NllLossOptions {
  Tensor weight{};
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};
// log-probabilities in, as F.nll_loss.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NllLossOptions& options);
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100);

// F.cross_entropy: log_softmax over the class dim, then nll_loss. Besides class indices the
// target may hold class probabilities: a floating tensor of the input's shape (then ignore_index
// must stay negative and Mean divides by the number of items). label_smoothing in [0, 1] mixes in
// the uniform distribution with PyTorch's formula: (1 - e) * nll + e / C * smooth, smooth the sum
// over classes of -weight[c] * log p_c, reduced like nll (the weighted Mean over the kept targets'
// weights); for probability targets the target becomes t * (1 - e) + e / C.
struct CrossEntropyOptions {
  Tensor weight{};
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0.0;
};
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& options);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0, int64_t ignore_index = -100);

// Elementwise losses: input and target of one shape (any, 0-d and empty included) and one
// floating dtype (PyTorch broadcasts other shapes with a warning; strider refuses them). Both get
// gradients where PyTorch gives them.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; beta >= 0 (with beta == 0 the value is
// l1_loss's, the gradient at d == 0 is PyTorch's -1 where l1_loss's is 0).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// input: log-probabilities; target: probabilities (log-probabilities with log_target), each
// element target * (log target - input), 0 where target == 0 (its gradient w.r.t. the target
// there is NaN, as PyTorch's xlogy). BatchMean (sum / input.size(0)) is the KL divergence; Mean
// averages over every element, as PyTorch.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);
// input: probabilities in [0, 1]; target in [0, 1] (strider's check, PyTorch takes any value);
// -weight * (t log x + (1 - t) log(1 - x)) with each log clamped at -100 as PyTorch. weight
// broadcasts to the input's shape.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::Mean);
// input: logits, computed stably for any |logit| (1e4 included); target in [0, 1]; weight
// broadcasts to the input's shape, pos_weight (the positive examples' weight, per class: [C] for
// [N, C]) too.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                        Reduction reduction = Reduction::Mean, const Tensor& pos_weight = Tensor());

// Zeroes elements with probability p and scales the rest by 1/(1-p) when training (F.dropout's
// defaults: p = 0.5, training = true; pass the module's is_training()).
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, Generator* gen = nullptr);
// Normalizes over the trailing `normalized_shape` dims; the output is contiguous (SPEC §9).
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Normalizes groups of channels; the output takes the input's suggested format (SPEC §11).
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// PyTorch 2's F.scaled_dot_product_attention: softmax(scale * q k^T + mask) v over q
// [..., L, E], k [..., S, E], v [..., S, Ev], scale defaulting to 1/sqrt(E). attn_mask broadcasts
// to [..., L, S]: bool (true: the key takes part, PyTorch 2's convention) or floating (added).
// is_causal masks keys after the query (top-left aligned; not with attn_mask). Dropout on the
// probabilities whenever dropout_p > 0, so pass 0 outside training. 4-d inputs with equal head
// sizes and neither mask nor dropout run the fused kernel (ops/attention.h); the rest compose ops.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, Generator* gen = nullptr);
// weight [num_embeddings, dim], indices int64 of any shape -> [..., dim].
Tensor embedding(const Tensor& indices, const Tensor& weight);

// F.pad: `pad` lists (left, right) pairs starting from the last dimension; negative pads crop.
// mode: "constant" (allocated in the input's suggested format), "reflect", "replicate",
// "circular" (contiguous, as PyTorch 1.13 on CPU).
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode = "constant", double value = 0.0);
// [N, C*r*r, H, W] <-> [N, C, H*r, W*r]; the output takes the input's suggested format.
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);

struct InterpolateOptions {
  DimVector size{};                  // output spatial size, or
  std::vector<double> scale_factor{};  // one per spatial dim (or one for all)
  std::string mode = "nearest";    // nearest | nearest-exact | linear | bilinear | bicubic | trilinear | area
  bool align_corners = false;
};
// F.interpolate with PyTorch's coordinate rules; differentiable. Layout per SPEC §11.
Tensor interpolate(const Tensor& input, const InterpolateOptions& options);

}  // namespace strider::nn::functional
