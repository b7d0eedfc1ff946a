// Losses against PyTorch 1.13 (tests/golden/generate_losses.py): cross_entropy with
// label_smoothing, ignore_index and every reduction (spatial targets too), nll_loss and mse_loss,
// with their defaults, outputs and gradients.
#include <cmath>
#include <fstream>

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
  if (j.at("dtype") == "int64") return tensor(j.at("values").get<std::vector<int64_t>>()).reshape(DimVector(shape.begin(), shape.end()));
  std::vector<double> v;
  for (const json& x : j.at("values")) v.push_back(x.is_null() ? std::nan("") : x.get<double>());
  return tensor(v, kDouble).reshape(DimVector(shape.begin(), shape.end()));
}

F::Reduction reduction_of(const json& kwargs) {
  const std::string r = kwargs.value("reduction", "mean");  // PyTorch's default
  return r == "sum" ? F::Reduction::Sum : r == "none" ? F::Reduction::None : F::Reduction::Mean;
}

// The case's call with only the arguments PyTorch was given: the others take our defaults,
// which this checks are PyTorch's.
Tensor call(const std::string& fn, const Tensor& x, const Tensor& y, const json& kw) {
  if (fn == "cross_entropy") {
    if (kw.empty()) return F::cross_entropy(x, y);
    return F::cross_entropy(x, y, reduction_of(kw), kw.value("label_smoothing", 0.0), kw.value("ignore_index", -100));
  }
  if (fn == "nll_loss") return kw.empty() ? F::nll_loss(x, y) : F::nll_loss(x, y, reduction_of(kw));
  if (fn == "mse_loss") return kw.empty() ? F::mse_loss(x, y) : F::mse_loss(x, y, reduction_of(kw));
  ADD_FAILURE() << "no strider loss for " << fn;
  return Tensor();
}

TEST(LossGolden, MatchesPyTorch) {
  std::ifstream f(STRIDER_GOLDEN_DIR "/losses.json");
  ASSERT_TRUE(f.good());
  const json golden = json::parse(f);
  for (auto& [name, c] : golden.at("cases").items()) {
    SCOPED_TRACE(name);
    Tensor x = from_json(c.at("inputs")[0]).requires_grad_();
    Tensor y = from_json(c.at("inputs")[1]);
    Tensor out = call(c.at("fn"), x, y, c.at("kwargs"));
    EXPECT_TRUE(testing::all_close(out, from_json(c.at("out")), 1e-12, 1e-12));
    if (!c.contains("grad")) continue;
    out.backward();
    EXPECT_TRUE(testing::all_close(x.grad(), from_json(c.at("grad")), 1e-12, 1e-12));
  }
}

}  // namespace
}  // namespace strider
