// The activation functions and modules against PyTorch 1.13 (tests/golden/generate_activations.py):
// values and gradients in float64 and float32 on points crossing every branch, the modules'
// defaults and argument checks.
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "support/compare.h"

namespace strider {
namespace {

namespace F = nn::functional;
using nlohmann::json;

// The case's call with only the arguments PyTorch was given: the others take our defaults,
// which this checks are PyTorch's.
Tensor call(const std::string& name, const std::vector<double>& a, const Tensor& x) {
  if (name == "leaky_relu") return a.empty() ? F::leaky_relu(x) : F::leaky_relu(x, a[0]);
  if (name == "elu") return a.empty() ? F::elu(x) : F::elu(x, a[0]);
  if (name == "selu") return F::selu(x);
  if (name == "softplus") return a.empty() ? F::softplus(x) : F::softplus(x, a[0], a[1]);
  if (name == "hardtanh") return a.empty() ? F::hardtanh(x) : F::hardtanh(x, a[0], a[1]);
  if (name == "relu6") return F::relu6(x);
  if (name == "hardswish") return F::hardswish(x);
  if (name == "hardsigmoid") return F::hardsigmoid(x);
  if (name == "mish") return F::mish(x);
  if (name == "silu") return F::silu(x);
  if (name == "sigmoid") return F::sigmoid(x);
  if (name == "tanh") return F::tanh(x);
  ADD_FAILURE() << "no strider function for " << name;
  return x;
}

TEST(Activations, ValuesAndGradientsMatchPyTorch) {
  std::ifstream f(STRIDER_GOLDEN_DIR "/activations.json");
  ASSERT_TRUE(f.good());
  const json golden = json::parse(f);
  const auto xs = golden.at("x").get<std::vector<double>>();
  const auto gs = golden.at("g").get<std::vector<double>>();
  for (const json& c : golden.at("cases")) {
    const std::string name = c.at("name");
    const auto args = c.at("args").get<std::vector<double>>();
    for (ScalarType dt : {kDouble, kFloat}) {
      const std::string key = dt == kDouble ? "float64" : "float32";
      SCOPED_TRACE(name + " " + key + " args " + c.at("args").dump());
      // An ulp of difference in exp or tanh (PyTorch's Sleef against ours) grows where the
      // formulas cancel (1 - tanh^2 near saturation, elu's exp(x) - 1 near 0): hence atol.
      const double rtol = dt == kDouble ? 1e-12 : 4e-6, atol = dt == kDouble ? 1e-15 : 1e-6;
      Tensor x = tensor(xs, kDouble).to(dt).requires_grad_();
      Tensor y = call(name, args, x);
      EXPECT_EQ(y.dtype(), dt);
      y.backward(tensor(gs, kDouble).to(dt));
      EXPECT_TRUE(testing::all_close(y, tensor(c.at(key).at("y").get<std::vector<double>>(), kDouble), rtol, atol));
      EXPECT_TRUE(testing::all_close(x.grad(), tensor(c.at(key).at("grad").get<std::vector<double>>(), kDouble), rtol,
                                     atol));
    }
  }
}

TEST(Activations, ModulesApplyTheirFunctionWithPyTorchsDefaults) {
  Tensor x = tensor(std::vector<double>{-3.5, -1.0, -0.2, 0.0, 0.4, 2.0, 7.0});
  const std::vector<std::pair<std::shared_ptr<nn::Module>, std::function<Tensor(const Tensor&)>>> pairs = {
      {std::make_shared<nn::Sigmoid>(), [](const Tensor& t) { return sigmoid(t); }},
      {std::make_shared<nn::Tanh>(), [](const Tensor& t) { return tanh(t); }},
      {std::make_shared<nn::SiLU>(), [](const Tensor& t) { return silu(t); }},
      {std::make_shared<nn::Mish>(), [](const Tensor& t) { return mish(t); }},
      {std::make_shared<nn::Hardswish>(), [](const Tensor& t) { return hardswish(t); }},
      {std::make_shared<nn::Hardsigmoid>(), [](const Tensor& t) { return hardsigmoid(t); }},
      {std::make_shared<nn::SELU>(), [](const Tensor& t) { return selu(t); }},
      {std::make_shared<nn::ReLU6>(), [](const Tensor& t) { return hardtanh(t, 0, 6); }},
      {std::make_shared<nn::LeakyReLU>(), [](const Tensor& t) { return leaky_relu(t, 0.01); }},
      {std::make_shared<nn::LeakyReLU>(0.2), [](const Tensor& t) { return leaky_relu(t, 0.2); }},
      {std::make_shared<nn::ELU>(), [](const Tensor& t) { return elu(t, 1.0); }},
      {std::make_shared<nn::Softplus>(), [](const Tensor& t) { return softplus(t, 1.0, 20.0); }},
      {std::make_shared<nn::Hardtanh>(), [](const Tensor& t) { return hardtanh(t, -1.0, 1.0); }},
      {std::make_shared<nn::Softmax>(0), [](const Tensor& t) { return softmax(t, 0); }},
      {std::make_shared<nn::LogSoftmax>(-1), [](const Tensor& t) { return log_softmax(t, -1); }},
  };
  for (const auto& pair : pairs) {
    SCOPED_TRACE(pair.first->type_name());
    EXPECT_TRUE(testing::all_close((*pair.first)(x), pair.second(x), 0, 0));
  }
  EXPECT_THROW(nn::Hardtanh(1.0, 1.0), Error);
  EXPECT_THROW(nn::Softplus(0.0), Error);
  EXPECT_THROW(F::softplus(x, 0.0), Error);
}

TEST(Activations, HardtanhKeepsADenseInputsStridesAndIntegers) {
  // PyTorch's hardtanh clamps into empty_like(input): an ambiguous channels-last input keeps its
  // strides (a unary op's TensorIterator would make it contiguous), integers stay integers.
  Tensor x = arange(0, 40).to(kFloat).reshape({2, 1, 4, 5}).to(MemoryFormat::ChannelsLast);
  EXPECT_EQ(F::hardtanh(x, 0, 6).strides(), x.strides());
  EXPECT_EQ(F::relu6(arange(-4, 10)).dtype(), kLong);
  EXPECT_EQ(F::relu6(arange(-4, 10)).to(kDouble).sum().item<double>(), 0.0 + 1 + 2 + 3 + 4 + 5 + 6 * 4);
  EXPECT_THROW(F::hardtanh(ones({2}, kBool)), Error);
}

}  // namespace
}  // namespace strider
