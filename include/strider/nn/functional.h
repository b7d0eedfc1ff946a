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

enum class Reduction { Mean, Sum, None };

// logits [N, C] (or [N, C, d...]) and int64 class targets [N] ([N, d...]); label smoothing mixes
// in the uniform distribution as in PyTorch. ignore_index targets contribute nothing.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0, int64_t ignore_index = -100);
// log-probabilities [N, C] and int64 targets [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
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
