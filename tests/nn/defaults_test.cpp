// PyTorch 1.13's defaults (tests/golden/generate_defaults.py): each layer's state dict (keys,
// shapes, dtypes, buffers such as num_batches_tracked, constant initial values), init gains,
// the layers' default options and normalization constants, and the data loaders' defaults.
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "support/compare.h"

namespace strider {
namespace {

using nlohmann::json;

const json& golden() {
  static const json g = [] {
    std::ifstream f(STRIDER_GOLDEN_DIR "/defaults.json");
    EXPECT_TRUE(f.good());
    return json::parse(f);
  }();
  return g;
}

std::map<std::string, std::function<std::shared_ptr<nn::Module>()>> modules() {
  return {
      {"BatchNorm1d", [] { return std::make_shared<nn::BatchNorm1d>(4); }},
      {"BatchNorm2d", [] { return std::make_shared<nn::BatchNorm2d>(4); }},
      {"LayerNorm", [] { return std::make_shared<nn::LayerNorm>(DimVector{4}); }},
      {"GroupNorm", [] { return std::make_shared<nn::GroupNorm>(2, 4); }},
      {"Linear", [] { return std::make_shared<nn::Linear>(3, 2); }},
      {"Conv2d", [] { return std::make_shared<nn::Conv2d>(nn::ConvOptions{.in_channels = 2, .out_channels = 4, .kernel_size = {3}}); }},
      {"ConvTranspose2d",
       [] { return std::make_shared<nn::ConvTranspose2d>(nn::ConvOptions{.in_channels = 2, .out_channels = 4, .kernel_size = {3}}); }},
      {"Embedding", [] { return std::make_shared<nn::Embedding>(5, 3); }},
      {"MultiheadAttention", [] { return std::make_shared<nn::MultiheadAttention>(8, 2); }},
      {"TransformerEncoderLayer",
       [] { return std::make_shared<nn::TransformerEncoderLayer>(8, 2, nn::TransformerEncoderLayerOptions{.dim_feedforward = 16}); }},
  };
}

TEST(PyTorchDefaults, StateDictsHavePyTorchsKeysShapesDtypesAndInitialConstants) {
  const auto make = modules();
  for (auto& [name, entries] : golden().at("state_dicts").items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(make.count(name));
    const auto sd = make.at(name)()->state_dict();
    EXPECT_EQ(sd.size(), entries.size());
    for (const json& e : entries) {
      const std::string key = e[0];
      ASSERT_TRUE(sd.count(key)) << key;
      const Tensor& t = sd.at(key);
      const auto shape = e[1].at("shape").get<std::vector<int64_t>>();
      EXPECT_EQ(t.sizes(), IntArrayRef(DimVector(shape.begin(), shape.end()))) << key;
      EXPECT_EQ(to_string(t.dtype()), e[1].at("dtype").get<std::string>()) << key;
      if (e[1].contains("values")) {
        EXPECT_EQ(testing::values(t), e[1].at("values").get<std::vector<double>>()) << key;
      } else {
        // Random initializations are not constant (and PyTorch's bounds are checked below).
        EXPECT_GT(testing::values(max(t) - min(t))[0], 0.0) << key;
      }
    }
  }
}

TEST(PyTorchDefaults, InitGains) {
  for (auto& [name, gain] : golden().at("gains").items()) {
    const double got = name == "leaky_relu(0.2)" ? nn::init::calculate_gain("leaky_relu", 0.2) : nn::init::calculate_gain(name);
    EXPECT_DOUBLE_EQ(got, gain.get<double>()) << name;
  }
  // Linear and convolution layers: kaiming_uniform(a = sqrt(5)) weights and bias, both within
  // 1/sqrt(fan_in).
  manual_seed(3);
  nn::Linear lin(50, 40);
  EXPECT_LE(testing::values(max(abs(lin.param("weight"))))[0], 1.0 / std::sqrt(50.0));
  EXPECT_GT(testing::values(max(abs(lin.param("weight"))))[0], 0.9 / std::sqrt(50.0));
  EXPECT_LE(testing::values(max(abs(lin.param("bias"))))[0], 1.0 / std::sqrt(50.0));
}

TEST(PyTorchDefaults, LayerOptions) {
  const json& m = golden().at("modules");
  const nn::MultiheadAttentionOptions mha;
  EXPECT_EQ(mha.dropout, m["MultiheadAttention"]["dropout"].get<double>());
  EXPECT_EQ(mha.batch_first, m["MultiheadAttention"]["batch_first"].get<bool>());
  EXPECT_EQ(mha.add_zero_attn, m["MultiheadAttention"]["add_zero_attn"].get<bool>());
  EXPECT_EQ(mha.bias, m["MultiheadAttention"]["bias"].get<bool>());
  EXPECT_EQ(mha.add_bias_kv, m["MultiheadAttention"]["add_bias_kv"].get<bool>());
  const nn::TransformerEncoderLayerOptions tel;
  EXPECT_EQ(tel.dim_feedforward, m["TransformerEncoderLayer"]["dim_feedforward"].get<int64_t>());
  EXPECT_EQ(tel.dropout, m["TransformerEncoderLayer"]["dropout"].get<double>());
  EXPECT_EQ(tel.layer_norm_eps, m["TransformerEncoderLayer"]["layer_norm_eps"].get<double>());
  EXPECT_EQ(tel.batch_first, m["TransformerEncoderLayer"]["batch_first"].get<bool>());
  EXPECT_EQ(tel.norm_first, m["TransformerEncoderLayer"]["norm_first"].get<bool>());
  EXPECT_EQ(tel.activation, m["TransformerEncoderLayer"]["activation"].get<std::string>());
  const io::DataLoaderOptions dl;
  EXPECT_EQ(dl.batch_size, m["DataLoader"]["batch_size"].get<int64_t>());
  EXPECT_EQ(dl.shuffle, m["DataLoader"]["shuffle"].get<bool>());
  EXPECT_EQ(dl.drop_last, m["DataLoader"]["drop_last"].get<bool>());
  // DistributedSampler(size): shuffled with seed 0, padded (not dropped) to equal rank shares.
  io::DistributedSampler sampler(10, 3, 0);
  EXPECT_EQ(sampler.num_samples(), 4) << "drop_last = false pads 10 to 12";
  EXPECT_EQ(sampler.indices(0), io::DistributedSampler(10, 3, 0, true, 0, false).indices(0));
  EXPECT_NE(sampler.indices(0), io::DistributedSampler(10, 3, 0, false).indices(0)) << "shuffled by default";
  EXPECT_THROW(nn::Conv2d({.in_channels = 2, .out_channels = 4}), Error) << "kernel_size is required";
}

// eps and momentum seen through what they do: BatchNorm's running statistics move by 0.1 of
// the batch's (unbiased variance), evaluation divides by sqrt(var + 1e-5); LayerNorm and
// GroupNorm use 1e-5 too.
TEST(PyTorchDefaults, NormalizationConstants) {
  const json& m = golden().at("modules");
  const double eps = m["BatchNorm"]["eps"], momentum = m["BatchNorm"]["momentum"];
  ASSERT_EQ(m["LayerNorm"]["eps"].get<double>(), eps);
  ASSERT_EQ(m["GroupNorm"]["eps"].get<double>(), eps);
  nn::BatchNorm1d bn(1);
  bn.to(kDouble);
  Tensor x = tensor(std::vector<double>{1, 2, 3, 6}, kDouble).reshape({4, 1});
  bn(x);
  const double mean = 3, unbiased = (4 + 1 + 0 + 9) / 3.0;
  EXPECT_NEAR(bn.buffer("running_mean").item<double>(), momentum * mean, 1e-12);
  EXPECT_NEAR(bn.buffer("running_var").item<double>(), (1 - momentum) + momentum * unbiased, 1e-12);
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 1);
  bn.eval();
  const double rm = momentum * mean, rv = (1 - momentum) + momentum * unbiased;
  EXPECT_NEAR(bn(x).reshape({-1}).to(kDouble).data_ptr<double>()[3], (6 - rm) / std::sqrt(rv + eps), 1e-12);
  // A row of variance 1e-6: eps is visible.
  Tensor row = tensor(std::vector<double>{-1e-3, 1e-3}, kDouble).reshape({1, 2});
  nn::LayerNorm ln(DimVector{2});
  ln.to(kDouble);
  EXPECT_NEAR(ln(row).reshape({-1}).data_ptr<double>()[1], 1e-3 / std::sqrt(1e-6 + eps), 1e-12);
  nn::GroupNorm gn(1, 2);
  gn.to(kDouble);
  EXPECT_NEAR(gn(row).reshape({-1}).data_ptr<double>()[1], 1e-3 / std::sqrt(1e-6 + eps), 1e-12);
}

}  // namespace
}  // namespace strider
