// Losses against PyTorch 1.13 (tests/golden/generate_losses.py): every loss in float64 and
// float32 with each reduction, its defaults, weights, extreme and edge values, N-d and empty
// inputs; outputs and the gradients for input and target.
#include <cmath>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "support/compare.h"

namespace strider {
namespace {

namespace F = nn::functional;
using nlohmann::json;

Tensor from_json(const json& j) {
  const auto shape = j.at("shape").get<std::vector<int64_t>>();
  const DimVector sizes(shape.begin(), shape.end());
  if (j.at("dtype") == "int64") return tensor(j.at("values").get<std::vector<int64_t>>()).reshape(sizes);
  std::vector<double> v;
  const double inf = std::numeric_limits<double>::infinity();
  for (const json& x : j.at("values"))
    v.push_back(x.is_null() ? std::nan("") : x.is_string() ? (x == "inf" ? inf : -inf) : x.get<double>());
  Tensor t = tensor(v, kDouble).reshape(sizes);  // float32 values are exact in float64
  return j.at("dtype") == "float32" ? t.to(kFloat) : t;
}

F::Reduction reduction_of(const json& kwargs) {
  const std::string r = kwargs.value("reduction", "mean");  // PyTorch's default
  if (r == "batchmean") return F::Reduction::BatchMean;
  return r == "sum" ? F::Reduction::Sum : r == "none" ? F::Reduction::None : F::Reduction::Mean;
}

Tensor tensor_arg(const json& kw, const char* name) { return kw.contains(name) ? from_json(kw.at(name)) : Tensor(); }

// The case's call with only the arguments PyTorch was given: the others take our defaults,
// which this checks are PyTorch's.
Tensor call(const std::string& fn, const Tensor& x, const Tensor& y, const json& kw) {
  const bool defaults = kw.empty();
  if (fn == "cross_entropy") {
    if (defaults) return F::cross_entropy(x, y);
    if (!kw.contains("weight"))  // the positional overload
      return F::cross_entropy(x, y, reduction_of(kw), kw.value("label_smoothing", 0.0), kw.value("ignore_index", -100));
    F::CrossEntropyOptions o{.weight = tensor_arg(kw, "weight")};
    if (kw.contains("ignore_index")) o.ignore_index = kw.at("ignore_index");
    if (kw.contains("reduction")) o.reduction = reduction_of(kw);
    if (kw.contains("label_smoothing")) o.label_smoothing = kw.at("label_smoothing");
    return F::cross_entropy(x, y, o);
  }
  if (fn == "nll_loss") {
    if (defaults) return F::nll_loss(x, y);
    if (!kw.contains("weight")) return F::nll_loss(x, y, reduction_of(kw));
    F::NllLossOptions o{.weight = tensor_arg(kw, "weight")};
    if (kw.contains("reduction")) o.reduction = reduction_of(kw);
    return F::nll_loss(x, y, o);
  }
  if (fn == "mse_loss") return defaults ? F::mse_loss(x, y) : F::mse_loss(x, y, reduction_of(kw));
  if (fn == "l1_loss") return defaults ? F::l1_loss(x, y) : F::l1_loss(x, y, reduction_of(kw));
  if (fn == "smooth_l1_loss")
    return defaults ? F::smooth_l1_loss(x, y) : F::smooth_l1_loss(x, y, reduction_of(kw), kw.value("beta", 1.0));
  if (fn == "huber_loss")
    return defaults ? F::huber_loss(x, y) : F::huber_loss(x, y, reduction_of(kw), kw.value("delta", 1.0));
  if (fn == "kl_div")
    return defaults ? F::kl_div(x, y) : F::kl_div(x, y, reduction_of(kw), kw.value("log_target", false));
  if (fn == "binary_cross_entropy")
    return defaults ? F::binary_cross_entropy(x, y)
                    : F::binary_cross_entropy(x, y, tensor_arg(kw, "weight"), reduction_of(kw));
  if (fn == "binary_cross_entropy_with_logits")
    return defaults ? F::binary_cross_entropy_with_logits(x, y)
                    : F::binary_cross_entropy_with_logits(x, y, tensor_arg(kw, "weight"), reduction_of(kw),
                                                          tensor_arg(kw, "pos_weight"));
  ADD_FAILURE() << "no strider loss for " << fn;
  return Tensor();
}

// Each case's output, and the gradients of sum(out * grad_output) for the input and, where
// recorded, the target. float64 agrees to rounding; float32 to a few float32 ulps, since the
// order of operations differs (PyTorch's kernels against strider's ops).
TEST(LossGolden, MatchesPyTorch) {
  std::ifstream f(STRIDER_GOLDEN_DIR "/losses.json");
  ASSERT_TRUE(f.good());
  const json golden = json::parse(f);
  int checked = 0;
  for (auto& [name, c] : golden.at("cases").items()) {
    SCOPED_TRACE(name);
    Tensor x = from_json(c.at("inputs")[0]).requires_grad_();
    Tensor y = from_json(c.at("inputs")[1]);
    const bool target_grad = c.contains("target_grad");
    if (target_grad) y.requires_grad_();
    const double tol = x.dtype() == kFloat ? 2e-6 : 1e-12;
    Tensor out = call(c.at("fn"), x, y, c.at("kwargs"));
    EXPECT_EQ(out.dtype(), x.dtype());
    EXPECT_TRUE(testing::all_close(out, from_json(c.at("out")), tol, tol));
    if (!c.contains("grad")) continue;
    if (c.contains("grad_output")) out.backward(from_json(c.at("grad_output")));
    else out.backward();
    EXPECT_TRUE(testing::all_close(x.grad(), from_json(c.at("grad")), tol, tol));
    if (target_grad) EXPECT_TRUE(testing::all_close(y.grad(), from_json(c.at("target_grad")), tol, tol));
    ++checked;
  }
  EXPECT_GE(checked, 200);
}

}  // namespace
}  // namespace strider
