// Printing against PyTorch 1.13's repr (tests/golden/print.json, generate_print.py): every rule of
// its printer, each case built from the recorded values so only the printing is under test. The
// autograd suffix names strider's nodes, checked here apart.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strider {
namespace {

ScalarType dtype_named(const std::string& name) {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (to_string(static_cast<ScalarType>(i)) == name) return static_cast<ScalarType>(i);
  ADD_FAILURE() << "no dtype " << name;
  return kFloat;
}

double number(const nlohmann::json& v) {
  if (!v.is_string()) return v.get<double>();
  const std::string s = v.get<std::string>();
  return s == "nan" ? NAN : (s == "-inf" ? -INFINITY : INFINITY);
}

TEST(Print, MatchesPyTorchsRepr) {
  std::ifstream f(STRIDER_GOLDEN_DIR "/print.json");
  ASSERT_TRUE(f.good()) << "cannot open " << STRIDER_GOLDEN_DIR "/print.json";
  const nlohmann::json cases = nlohmann::json::parse(f);
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    const ScalarType dtype = dtype_named(c.at("dtype").get<std::string>());
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    Tensor t;
    if (is_floating_point(dtype)) {
      std::vector<double> values;
      for (const auto& v : c.at("values")) values.push_back(number(v));
      t = tensor(values, dtype);
    } else {  // integers read as integers: int64 past 2^53 must arrive exact
      t = tensor(c.at("values").get<std::vector<int64_t>>(), dtype);
    }
    t = t.reshape(DimVector(shape.begin(), shape.end()));
    if (c.at("requires_grad").get<bool>()) t.requires_grad_(true);
    EXPECT_EQ(t.to_string(), c.at("repr").get<std::string>()) << c.at("name").get<std::string>();
  }
}

TEST(Print, NamesTheNodeThatMadeATensor) {
  Tensor a = tensor(std::vector<double>{1, 2}).requires_grad_(true);
  Tensor b = a * 2.0;
  ASSERT_TRUE(b.grad_fn());
  EXPECT_EQ(b.to_string(), "tensor([2., 4.], grad_fn=<" + b.grad_fn()->name() + ">)");
  NoGradGuard no_grad;
  EXPECT_EQ((a * 2.0).to_string(), "tensor([2., 4.])");
}

}  // namespace
}  // namespace strider
