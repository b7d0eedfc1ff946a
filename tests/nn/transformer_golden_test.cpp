// nn::MultiheadAttention and nn::TransformerEncoderLayer against PyTorch 1.13: each case loads
// PyTorch's state dict unchanged (strict), makes the same call through the module's keyword
// interface, and compares outputs, attention weights and every gradient
// (tests/golden/generate_transformer.py recorded them).
#include <nlohmann/json.hpp>

#include "support/compare.h"
#include "support/gradcheck.h"

namespace strider {
namespace {

using testing::all_close;

const io::SafetensorsFile& golden() {
  static const io::SafetensorsFile file = io::load_safetensors(STRIDER_GOLDEN_DIR "/transformer.safetensors");
  return file;
}

std::map<std::string, Tensor> with_prefix(const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : golden().tensors)
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = t;
  return out;
}

std::shared_ptr<nn::Module> make_module(const nlohmann::json& cfg) {
  const int64_t E = 8, H = 2;
  if (cfg["kind"] == "mha")
    return std::make_shared<nn::MultiheadAttention>(
        E, H,
        nn::MultiheadAttentionOptions{.bias = cfg.value("bias", true),
                                      .add_bias_kv = cfg.value("add_bias_kv", false),
                                      .add_zero_attn = cfg.value("add_zero_attn", false),
                                      .kdim = cfg.value("kdim", 0),
                                      .vdim = cfg.value("vdim", 0),
                                      .batch_first = cfg.value("batch_first", false)});
  return std::make_shared<nn::TransformerEncoderLayer>(
      E, H,
      nn::TransformerEncoderLayerOptions{.dim_feedforward = cfg["dim_feedforward"],
                                         .dropout = 0.0,
                                         .activation = cfg["activation"],
                                         .batch_first = cfg["batch_first"],
                                         .norm_first = cfg["norm_first"]});
}

void replay(const std::string& name) {
  SCOPED_TRACE(name);
  const auto desc = nlohmann::json::parse(golden().metadata.at(name));
  auto module = make_module(desc["module"]);
  module->load_state_dict(with_prefix(name + ".param."));  // strict: PyTorch's names exactly

  auto inputs = with_prefix(name + ".in.");
  nn::Args args;
  std::map<std::string, Tensor> leaves;
  for (const std::string key : desc["positional"]) {
    Tensor t = inputs.at(key).clone().requires_grad_(true);
    leaves[key] = t;
    args.add(t);
  }
  for (const std::string key : desc["keywords"]) args.add(nn::kw(key, inputs.at(key)));
  const auto& call = desc["call"];
  if (call.contains("need_weights")) args.add(nn::kw("need_weights", call["need_weights"].get<bool>()));
  if (call.contains("average_attn_weights") && !call["average_attn_weights"].get<bool>())
    args.add(nn::kw("average_attn_weights", false));

  nn::Value out = module->call(args);
  Tensor output = out.is_list() ? out[0].tensor() : out.tensor();
  const auto want = with_prefix(name + ".out.");
  EXPECT_TRUE(all_close(output, want.at("output"), 1e-5, 1e-6)) << "output";
  if (want.count("weights")) {
    ASSERT_TRUE(out[1].is_tensor());
    EXPECT_TRUE(all_close(out[1].tensor(), want.at("weights"), 1e-5, 1e-6)) << "attention weights";
  } else if (out.is_list()) {
    EXPECT_TRUE(out[1].is_none()) << "need_weights=False returns None";
  }

  sum(output * inputs.at("grad_out")).backward();
  const auto grads = with_prefix(name + ".grad.");
  for (const auto& [pname, p] : module->named_parameters()) {
    ASSERT_TRUE(grads.count(pname)) << pname;
    EXPECT_TRUE(all_close(p.grad(), grads.at(pname), 1e-4, 1e-5)) << "gradient of " << pname;
  }
  for (const auto& [key, t] : leaves) EXPECT_TRUE(all_close(t.grad(), grads.at(key), 1e-4, 1e-5)) << "gradient of " << key;
}

TEST(TransformerGolden, MultiheadAttentionSelf) { replay("mha_self"); }
TEST(TransformerGolden, MultiheadAttentionBoolMasksBatchFirst) { replay("mha_bool_masks"); }
TEST(TransformerGolden, MultiheadAttentionFloatMask) { replay("mha_float_mask"); }
TEST(TransformerGolden, MultiheadAttentionKdimVdimBiasKvZeroAttn) { replay("mha_kdim_vdim"); }
TEST(TransformerGolden, MultiheadAttentionUnbatched) { replay("mha_unbatched"); }
TEST(TransformerGolden, EncoderLayerPostNormRelu) { replay("tel_post_relu"); }
TEST(TransformerGolden, EncoderLayerPreNormGeluCausal) { replay("tel_pre_gelu"); }

TEST(TransformerGolden, EveryCaseIsReplayed) {
  std::set<std::string> cases;
  for (const auto& [key, value] : golden().metadata)
    if (key != "generator" && key != "torch") cases.insert(key);
  EXPECT_EQ(cases, (std::set<std::string>{"mha_self", "mha_bool_masks", "mha_float_mask", "mha_kdim_vdim",
                                          "mha_unbatched", "tel_post_relu", "tel_pre_gelu"}));
}

// float64 central differences through the whole attention (masks, bias_kv, zero_attn).
TEST(TransformerGradcheck, MultiheadAttentionFloat64) {
  manual_seed(3);
  nn::MultiheadAttention mha(4, 2, {.add_bias_kv = true, .add_zero_attn = true, .kdim = 3, .batch_first = true});
  mha.to(kDouble);
  Tensor q = randn({2, 3, 4}, kDouble).requires_grad_(true);
  Tensor k = randn({2, 5, 3}, kDouble).requires_grad_(true);
  Tensor v = randn({2, 5, 4}, kDouble).requires_grad_(true);
  Tensor pad = zeros({2, 5}, kBool);
  pad.narrow(1, 3, 2).narrow(0, 1, 1).fill_(1);
  Tensor bias = randn({3, 5}, kDouble);
  std::vector<Tensor> inputs = {q, k, v};
  for (auto& [name, p] : mha.named_parameters()) inputs.push_back(p);
  EXPECT_TRUE(testing::gradcheck(
      [&](const std::vector<Tensor>&) { return mha.forward(q, k, v, pad, true, bias, false).first; }, inputs));
}

// The output's strides as PyTorch 1.13 returns them (N 3, L 5, E 8): a transposed view of
// [L, N, E] rows with batch_first, contiguous where its fused inference kernel would run.
TEST(TransformerGolden, MultiheadAttentionBatchFirstStridesAsPyTorch) {
  manual_seed(5);
  nn::MultiheadAttention mha(8, 2, {.batch_first = true});
  const Tensor x = randn({3, 5, 8});
  using Strides = std::vector<int64_t>;
  auto strides = [](const Tensor& t) { return Strides(t.strides().begin(), t.strides().end()); };
  const Tensor trained = mha.forward(x, x, x).first;
  EXPECT_EQ(strides(trained), (Strides{8, 24, 1}));
  mha.eval();
  EXPECT_EQ(strides(mha.forward(x, x, x).first), (Strides{8, 24, 1}));  // parameters require grad
  {
    autograd::NoGradGuard no_grad;
    const Tensor fused = mha.forward(x, x, x).first;
    EXPECT_EQ(strides(fused), (Strides{40, 8, 1}));
    EXPECT_TRUE(all_close(fused, trained, 1e-6, 1e-6));
    EXPECT_EQ(strides(mha.forward(x, x, x, Tensor(), false).first), (Strides{40, 8, 1}));
    EXPECT_EQ(strides(mha.forward(x, x.clone(), x.clone()).first), (Strides{8, 24, 1}));  // not self-attention
    nn::MultiheadAttention odd(8, 1, {.batch_first = true});
    odd.eval();
    EXPECT_EQ(strides(odd.forward(x, x, x).first), (Strides{8, 24, 1}));  // odd head count
    nn::MultiheadAttention seq_first(8, 2);
    EXPECT_EQ(strides(seq_first.forward(x, x, x).first), (Strides{40, 8, 1}));
    const Tensor one = randn({5, 8});
    EXPECT_EQ(strides(mha.forward(one, one, one).first), (Strides{8, 1}));
  }
  for (auto& [name, p] : mha.named_parameters()) p.requires_grad_(false);
  EXPECT_EQ(strides(mha.forward(x, x, x).first), (Strides{40, 8, 1}));  // frozen, grad mode on
  const Tensor needs_grad = x.clone().requires_grad_(true);
  EXPECT_EQ(strides(mha.forward(needs_grad, needs_grad, needs_grad).first), (Strides{8, 24, 1}));
}

}  // namespace
}  // namespace strider
