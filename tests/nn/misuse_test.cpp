// API misuse, table-driven: each call is a strider::Error naming the op and the values, never a
// crash, and a failed load leaves the model and optimizer as they were.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <functional>
#include <limits>

namespace strider {
namespace {

struct Misuse {
  const char* what;
  std::function<void()> call;
  const char* expect;  // a piece of the message
};

void expect_errors(const std::vector<Misuse>& cases) {
  for (const Misuse& c : cases) {
    std::string msg;
    try {
      c.call();
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": got '" << msg << "'";
  }
}

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
