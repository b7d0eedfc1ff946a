// API misuse, table-driven: each call is a strider::Error naming the op and the values, never a
// crash, and a failed load leaves the model and optimizer as they were.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <functional>
#include <limits>

#include "support/compare.h"
#include "support/misuse.h"

namespace strider {
namespace {

using testing::expect_errors;
using testing::Misuse;

TEST(Misuse, UndefinedTensorsThrow) {
  const Tensor u;
  expect_errors({
      {"dim", [&] { (void)u.dim(); }, "undefined"},
      {"sizes", [&] { (void)u.sizes(); }, "undefined"},
      {"numel", [&] { (void)u.numel(); }, "undefined"},
      {"sum", [&] { (void)u.sum(); }, "undefined"},
      {"to(dtype)", [&] { (void)u.to(kFloat); }, "undefined"},
      {"contiguous", [&] { (void)u.contiguous(); }, "undefined"},
      {"add", [&] { (void)(u + ones({2})); }, "undefined"},
      {"requires_grad_", [&] { Tensor v; v.requires_grad_(); }, "undefined"},
      {"is_contiguous", [&] { (void)u.is_contiguous(); }, "undefined"},
      {"item", [&] { (void)u.item(); }, "undefined"},
  });
  EXPECT_FALSE(u.requires_grad());
  EXPECT_FALSE(u.grad().defined());
}

TEST(Misuse, SizesThatOverflowAreErrors) {
  const int64_t big = int64_t{1} << 40;
  expect_errors({
      {"empty", [&] { empty({big, big}); }, "64-bit"},
      {"empty with a zero dim", [&] { empty({0, big, big}); }, "64-bit"},
      {"negative size", [&] { empty({2, -3}); }, "negative dimension"},
      {"empty_strided span", [&] { empty_strided({big, 3}, {big, 1}); }, "64 bits"},
      {"bytes", [&] { empty({int64_t{1} << 62}, kDouble); }, "bytes"},
      {"expand", [&] { ones({1, 1}).expand({big, big}); }, "64-bit"},
      {"view", [&] { ones({4}).view({big, big}); }, ""},
      {"reshape", [&] { ones({4}).reshape({-1, 0}); }, ""},
      {"as_strided beyond storage", [&] { ones({4}).as_strided({8}, {1}); }, ""},
  });
}

TEST(Misuse, OutputSizesBelowOneRaiseAsInPyTorch) {
  expect_errors({
      {"conv kernel larger than input", [] { conv2d(ones({1, 1, 2, 2}), ones({1, 1, 3, 3})); },
       "Kernel size can't be greater"},
      {"max_pool window larger than input", [] { max_pool2d(ones({1, 1, 2, 2}), {3, 3}, {1, 1}); },
       "too small"},
      {"avg_pool stride 2", [] { avg_pool2d(ones({1, 1, 2, 2}), {3, 3}, {2, 2}); }, "too small"},
      {"conv_transpose negative output",
       [] { conv_transpose2d(ones({1, 1, 1, 1}), ones({1, 1, 1, 1}), {}, {1, 1}, {3, 3}); },
       "too small"},
  });
}

// Argument checks PyTorch makes: each a strider::Error, none a crash or silent garbage.
TEST(Misuse, ArgumentChecksPyTorchMakes) {
  namespace F = nn::functional;
  const Tensor x = ones({2, 4, 5, 5});
  const Tensor idx = tensor(std::vector<int64_t>{0, 7});
  expect_errors({
      {"embedding index out of range", [&] { F::embedding(idx, ones({5, 3})); }, "embedding"},
      {"negative embedding index", [&] { F::embedding(tensor(std::vector<int64_t>{-1}), ones({5, 3})); }, "embedding"},
      {"cross_entropy target out of range", [&] { F::cross_entropy(ones({2, 3}), tensor(std::vector<int64_t>{0, 3})); },
       "out of bounds"},
      {"cross_entropy batch mismatch", [&] { F::cross_entropy(ones({2, 3}), tensor(std::vector<int64_t>{0})); },
       "[cross_entropy] input [2, 3] needs a target of shape [2]"},
      // The same element count in another shape would pair items with the wrong pixels.
      {"cross_entropy spatial target transposed",
       [&] { F::cross_entropy(ones({2, 3, 2, 4}), zeros({2, 4, 2}, kLong)); },
       "[cross_entropy] input [2, 3, 2, 4] needs a target of shape [2, 2, 4]"},
      {"cross_entropy spatial target flattened", [&] { F::cross_entropy(ones({2, 3, 2, 2}), zeros({2, 4}, kLong)); },
       "needs a target of shape [2, 2, 2]"},
      {"cross_entropy unreduced, target batch", [&] {
         F::cross_entropy(ones({2, 3, 2, 2}), zeros({4, 2}, kLong), F::Reduction::None); }, "needs a target of shape"},
      {"cross_entropy smoothed, flat target", [&] {
         F::cross_entropy(ones({2, 3, 2, 2}), zeros({8}, kLong), F::Reduction::Mean, 0.1); },
       "[cross_entropy] input [2, 3, 2, 2] needs a target"},
      {"cross_entropy out of range names itself",
       [&] { F::cross_entropy(ones({4, 5}), tensor(std::vector<int64_t>{1, 0, 5, 2})); },
       "[cross_entropy] target 5 is out of bounds for 5 classes"},
      {"cross_entropy float target of another shape", [&] { F::cross_entropy(ones({4, 5}), ones({4})); },
       "[cross_entropy] expected int64 class indices as targets, got float32 (class-probability targets, for "
       "cross_entropy, have the input's shape [4, 5])"},
      {"nll_loss spatial target transposed", [&] { F::nll_loss(ones({2, 3, 2, 4}), zeros({2, 4, 2}, kLong)); },
       "[nll_loss] input [2, 3, 2, 4] needs a target of shape [2, 2, 4]"},
      {"index_select out of range", [&] { index_select(ones({3, 2}), 0, idx); }, "index_select"},
      {"pixel_shuffle channels", [&] { F::pixel_shuffle(ones({1, 3, 2, 2}), 2); }, "pixel_shuffle"},
      {"reflect pad beyond size", [&] { F::pad(ones({1, 1, 2, 2}), {3, 3, 3, 3}, "reflect"); }, "pad"},
      {"pad with odd length", [&] { F::pad(x, {1, 1, 1}); }, "pad"},
      {"interpolate to size 0", [&] { F::interpolate(x, {.size = DimVector{0, 3}}); }, "interpolate"},
      // PyTorch refuses these too; they failed deep inside as "[index_select] index -1 is out of range".
      {"replicate pad of an empty H", [&] { F::pad(empty({2, 3, 0, 5}), {1, 1, 1, 1}, "replicate"); },
       "[pad] replicate padding copies values from the input, but dimension 2 of input [2, 3, 0, 5] is empty"},
      {"reflect pad of an empty C", [&] { F::pad(empty({2, 0, 4, 5}), {1, 1, 1, 1}, "reflect"); },
       "[pad] reflect padding copies values from the input, but dimension 1 of input [2, 0, 4, 5] is empty"},
      {"interpolate an empty H", [&] { F::interpolate(empty({2, 3, 0, 5}), {.size = DimVector{4, 4}}); },
       "[interpolate] input and output sizes should be greater than 0, but spatial dimension 2 of input [2, 3, 0, 5] "
       "is empty"},
      {"softmax dim", [&] { softmax(x, 4); }, "dim"},
      {"cat of nothing", [] { cat({}); }, "cat"},
      {"cat shape mismatch", [&] { cat({x, ones({2, 4, 5, 6})}, 1); }, "cat"},
      {"stack shape mismatch", [&] { stack({x, ones({2, 4, 5, 6})}); }, "stack"},
      {"narrow beyond the end", [&] { x.narrow(1, 3, 5); }, "narrow"},
      {"select out of range", [&] { x.select(0, 2); }, "select"},
      {"permute repeats a dim", [&] { x.permute({0, 0, 1, 2}); }, "permute"},
      {"transpose dim", [&] { x.transpose(0, 9); }, "dim"},
      {"reshape to another size", [&] { x.reshape({3, 7}); }, "shape"},
      {"sum over a missing dim", [&] { sum(x, {5}); }, "dim"},
      {"linear width mismatch", [&] { linear(ones({2, 3}), ones({4, 5})); }, "linear"},
      {"matmul inner mismatch", [&] { matmul(ones({2, 3}), ones({4, 5})); }, "cannot be multiplied"},
      {"bmm batch mismatch", [&] { bmm(ones({2, 3, 4}), ones({3, 4, 5})); }, "bmm does not broadcast"},
      {"conv groups", [&] { conv2d(x, ones({6, 4, 3, 3}), {}, {1}, {0}, {1}, 3); }, "groups"},
      {"conv channels", [&] { conv2d(x, ones({6, 3, 3, 3})); }, "channels"},
      {"batch_norm channels", [&] { batch_norm(x, ones({3}), ones({3})); }, "batch_norm"},
      {"layer_norm shape", [&] { F::layer_norm(x, {4}); }, "layer_norm"},
      {"layer_norm weight dtype", [&] { F::layer_norm(ones({2, 4}, kDouble), {4}, ones({4})); }, ".to(float64)"},
      {"group_norm groups", [&] { F::group_norm(x, 3); }, "group_norm"},
      {"adaptive pool to -1", [&] { adaptive_avg_pool2d(x, {-1, 2}); }, "output size"},
      {"max_pool dilation 0", [&] { max_pool2d(x, {2, 2}, {1, 1}, {0}, {0}); }, "dilation"},
      {"broadcast mismatch", [&] { (void)(ones({2, 3}) + ones({4, 3})); }, ""},
  });
}

// Arguments PyTorch refuses (or divides by) that strider took silently or crashed on (SIGFPE):
// found by a newcomer audit.
TEST(Misuse, ArgumentsThatCrashedOrWereTakenSilently) {
  const Tensor w = empty({3, 4});
  expect_errors({
      {"LossScaler interval 0 (divided by)", [] { nn::LossScaler(65536, 2, 0.5, 0); }, "interval 0 must be positive"},
      {"LossScaler growth below 1", [] { nn::LossScaler(65536, 0.5); }, "growth 0.5 must be greater than 1"},
      {"LossScaler backoff 1", [] { nn::LossScaler(65536, 2, 1.0); }, "backoff 1 must lie in (0, 1)"},
      {"uniform_ with a > b", [&] { nn::init::uniform_(w, 1, 0); }, "expects a <= b"},
      {"normal_ with std < 0", [&] { nn::init::normal_(w, 0, -1); }, "std >= 0"},
      {"normal_ of an int64 tensor", [] { nn::init::normal_(empty({3}, kLong), 0, 1); }, "needs a floating-point tensor"},
      {"clip_grad_norm_ max_norm < 0", [&] { nn::utils::clip_grad_norm_({w}, -1); }, "max_norm must not be negative"},
      {"GPT with no heads (divided by)", [] { models::GPT(models::GPTConfig{.n_head = 0}); }, "n_head (0)"},
      {"TextLoader seq_len 0 (divided by)",
       [] { io::TextLoader(io::TextDataset{.tokens = zeros({100}, kLong)}, {.batch_size = 4, .seq_len = 0}); },
       "batch_size and seq_len must be positive"},
      {"OneCycleLR div_factor 0 (lr inf)",
       [] {
         Tensor p = zeros({2}).requires_grad_();
         optim::SGD sgd({{"p", p}}, {.lr = 0.1, .momentum = 0.9});
         optim::OneCycleLR(sgd, {.max_lr = {1.0}, .total_steps = 10, .div_factor = 0});
       },
       "div_factor must be positive"},
  });
  // bind_forward: an int64 beyond the parameter's int is refused, not truncated (4294967297 -> 1).
  EXPECT_THROW(nn::binding::from_value<int>(nn::Value(int64_t{4294967297})), Error);
  EXPECT_TRUE(nn::Value(nullptr).is_none());
  EXPECT_TRUE(nn::kw("mask", nullptr).value.is_none());
}

// clip_grad_norm_'s norm types as PyTorch 1.13 computes them: the norm of the gradients' norms,
// so -inf is the smallest magnitude, 0 counts the gradients holding a non-zero; max_norm 0 zeroes.
TEST(Misuse, ClipGradNormTypesAsPyTorch) {
  Tensor a = tensor(std::vector<double>{0.5, -4}).to(kFloat).requires_grad_(), b = tensor(std::vector<double>{1, 2}).to(kFloat).requires_grad_();
  auto set = [&] {
    a.set_grad(tensor(std::vector<double>{0.5, -4}).to(kFloat));
    b.set_grad(tensor(std::vector<double>{1, 2}).to(kFloat));
  };
  set();
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 100, -INFINITY), 0.5);
  EXPECT_EQ(testing::values(a.grad()), (std::vector<double>{0.5, -4}));  // 100 / 0.5 > 1: unchanged
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 100, 0), 2);
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 100, INFINITY), 4);
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 100, 2), std::sqrt(0.25 + 16 + 1 + 4), 1e-6);
  nn::utils::clip_grad_norm_({a, b}, 0);
  EXPECT_EQ(testing::values(a.grad()), (std::vector<double>{0, 0}));
  set();
  nn::utils::clip_grad_norm_({a, a}, 1);  // listed twice, scaled once
  EXPECT_NEAR(a.grad()[1].item<double>(), -4 / (std::sqrt(16.25) + 1e-6), 1e-6);
}

// Zero-size products are PyTorch's empty (or zero) results, not reshape errors: attention over an
// empty key sequence reached batched matmul with a 0, and Linear(0, n) is PyTorch's bias.
TEST(Misuse, ZeroSizeProductsAsPyTorch) {
  EXPECT_EQ(matmul(zeros({3, 0, 4}), zeros({3, 4, 5})).sizes(), IntArrayRef({3, 0, 5}));
  Tensor k0 = matmul(ones({3, 2, 0}), ones({3, 0, 5}));
  EXPECT_EQ(k0.sizes(), IntArrayRef({3, 2, 5}));
  EXPECT_EQ(k0.abs().sum().item<double>(), 0);
  EXPECT_EQ(matmul(zeros({0, 2, 4}), zeros({4, 5})).sizes(), IntArrayRef({0, 2, 5}));
  Tensor a = ones({3, 2, 0}).requires_grad_(), b = ones({3, 0, 5}).requires_grad_();
  matmul(a, b).sum().backward();
  EXPECT_EQ(b.grad().sizes(), IntArrayRef({3, 0, 5}));
  auto lin = std::make_shared<nn::Linear>(0, 3);
  Tensor x = ones({2, 0}).requires_grad_();
  Tensor y = (*lin)(x);
  EXPECT_TRUE(testing::all_close(y, lin->param("bias").detach().unsqueeze(0).expand({2, 3}), 0, 0));
  EXPECT_EQ(testing::values(lin->param("bias")), (std::vector<double>{0, 0, 0}));  // PyTorch's bound 0
  y.sum().backward();
  EXPECT_EQ(testing::values(lin->param("bias").grad()), (std::vector<double>{2, 2, 2}));
}

// torch.nn.utils' clip_grad_value_, parameters_to_vector and vector_to_parameters; the vector
// is in logical order whatever the layout, and going back copies into the parameters in place.
TEST(Misuse, ParameterVectorsAndValueClippingAsPyTorch) {
  Tensor a = arange(0, 6, 1, kFloat).view({1, 2, 3, 1}).contiguous(MemoryFormat::ChannelsLast), b = full({2}, 7.0);
  Tensor v = nn::utils::parameters_to_vector({a, b});
  EXPECT_EQ(testing::values(v), (std::vector<double>{0, 1, 2, 3, 4, 5, 7, 7}));
  const Tensor a_alias = a;
  nn::utils::vector_to_parameters(v * 2, {a, b});
  EXPECT_TRUE(a.is_same(a_alias));
  EXPECT_TRUE(a.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(testing::values(a), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_THROW(nn::utils::vector_to_parameters(v.narrow(0, 0, 7), {a, b}), Error);
  EXPECT_THROW(nn::utils::parameters_to_vector({a, b.to(kDouble)}), Error);
  Tensor p = zeros({3}).requires_grad_();
  p.set_grad(tensor(std::vector<double>{-5, 0.5, 9}).to(kFloat));
  nn::utils::clip_grad_value_({p}, 1);
  EXPECT_EQ(testing::values(p.grad()), (std::vector<double>{-1, 0.5, 1}));
  EXPECT_THROW(nn::utils::clip_grad_value_({p}, -1), Error);
}

TEST(Misuse, LoadStateDictIsAllOrNothing) {
  auto m = models::small_cnn();
  auto before = m->state_dict();
  std::map<std::string, Tensor> bad;
  for (auto& [n, t] : before) bad[n] = full(t.sizes(), 7.0, t.dtype());
  bad.rbegin()->second = ones({1});  // the last entry has the wrong shape
  EXPECT_THROW(m->load_state_dict(bad), Error);
  for (auto& [n, t] : m->state_dict()) EXPECT_TRUE(equal(t, before[n])) << n << " was overwritten";
  bad = before;
  bad["unexpected.weight"] = ones({1});
  EXPECT_THROW(m->load_state_dict(bad), Error);
}

TEST(Misuse, OptimizerStateIsValidatedAndAllOrNothing) {
  auto m = models::small_cnn();
  optim::AdamW opt(m->named_parameters(), {.lr = 1e-3});
  const std::string first = m->named_parameters().front().first;
  const Tensor p0 = m->named_parameters().front().second;
  auto complete = [&] {
    optim::OptimizerState s;
    for (auto& [n, p] : m->named_parameters()) s[n] = {{"exp_avg", zeros_like(p)}, {"exp_avg_sq", zeros_like(p)}};
    return s;
  };
  optim::OptimizerState s = complete();
  EXPECT_NO_THROW(opt.load_state(s, 3, "test"));
  EXPECT_EQ(opt.step_count(), 3);
  std::vector<std::pair<const char*, std::function<void(optim::OptimizerState&)>>> corruptions = {
      {"shape [1] broadcast into a parameter", [&](auto& st) { st[first]["exp_avg"] = zeros({1}); }},
      {"float64 state", [&](auto& st) { st[first]["exp_avg"] = zeros(p0.sizes(), kDouble); }},
      {"NaN state", [&](auto& st) { st[first]["exp_avg_sq"] = full(p0.sizes(), std::nan("")); }},
      {"missing entry", [&](auto& st) { st[first].erase("exp_avg"); }},
      {"renamed parameter", [&](auto& st) { st["renamed"] = st[first]; st.erase(first); }},
      {"unknown key", [&](auto& st) { st[first]["momentum_buffer"] = zeros_like(p0); }},
      {"parameter without state after steps", [&](auto& st) { st.erase(first); }},
  };
  for (auto& [what, corrupt] : corruptions) {
    optim::OptimizerState bad = complete();
    corrupt(bad);
    std::string msg;
    try {
      opt.load_state(bad, 5, "ckpt.safetensors");
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("ckpt.safetensors"), std::string::npos) << what << ": " << msg;
    EXPECT_EQ(opt.step_count(), 3) << what << ": a failed load changed the optimizer";
  }
}

}  // namespace
}  // namespace strider
