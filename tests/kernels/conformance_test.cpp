// Every fast kernel against the naive reference, over dtype x layout x shape (the ggml
// test-backend-ops idea). The reference uses <cmath> in the op's math type; the fast kernels use
// vectorized approximations, so float32 results agree to a few ulp.
#include <gtest/gtest.h>

#include <functional>

#include "strider/core/pointwise_table.h"
#include "strider/core/reduce_table.h"
#include "strider/ops/pointwise.h"
#include "support/compare.h"
#include "support/layouts.h"

namespace strider {
namespace {

using testing::all_close;
using testing::layouts_4d;

struct Tolerance {
  double rtol, atol;
};

Tolerance tolerance(ScalarType t) {
  switch (t) {
    case kDouble: return {1e-12, 1e-12};
    case kFloat: return {2e-6, 1e-6};
    case kBFloat16: return {1e-2, 1e-2};  // one rounding of the result
    case kHalf: return {2e-3, 1e-3};
    default: return {0, 0};
  }
}

// Runs f with the fast kernels and with the reference kernels and compares.
void expect_matches_reference(const std::function<Tensor()>& f, ScalarType dtype, const std::string& what) {
  Tensor fast = f();
  Tensor ref;
  {
    KernelPreferenceGuard guard(KernelPreference::Reference);
    ref = f();
  }
  EXPECT_EQ(fast.strides(), ref.strides()) << what;
  Tolerance tol = tolerance(dtype);
  EXPECT_TRUE(all_close(fast, ref, tol.rtol, tol.atol)) << what;
}

const std::vector<ScalarType> kFloatTypes = {kFloat, kDouble, kBFloat16, kHalf};
const std::vector<std::vector<int64_t>> kShapes = {{2, 3, 4, 5}, {3, 17, 9, 7}, {2, 64, 8, 8}};

TEST(PointwiseConformance, UnaryOpsMatchReference) {
  // Every plain row of the op table (sampled in its domain), then the custom rows by hand.
#define STRIDER_ROW(Enum, function, signature, kind, rule, domain, ...) STRIDER_ADD_##kind(function, domain)
#define STRIDER_ADD_Plain(function, domain)                                                  \
  {#function, [](const Tensor& t) {                                                         \
     return std::string(#domain) == "Positive" ? function(abs(t) + 0.05) : function(t); \
   }},
#define STRIDER_ADD_NoGrad(function, domain)
#define STRIDER_ADD_Custom(function, domain)
  std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {STRIDER_UNARY_OPS(STRIDER_ROW)};
#undef STRIDER_ROW
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> custom = {
      {"gelu", [](const Tensor& t) { return gelu(t); }},
      {"gelu_tanh", [](const Tensor& t) { return gelu(t, "tanh"); }},
      {"clamp", [](const Tensor& t) { return clamp(t, -0.5, 0.7); }},
      {"pow", [](const Tensor& t) { return pow(abs(t), 1.5); }},
      {"leaky_relu", [](const Tensor& t) { return leaky_relu(t, 0.2); }},
      {"elu", [](const Tensor& t) { return elu(t, 0.7); }},
      {"softplus", [](const Tensor& t) { return softplus(t * 8.0, 2.0, 10.0); }},
      {"hardtanh", [](const Tensor& t) { return hardtanh(t, -0.5, 0.7); }},
  };
  ops.insert(ops.end(), custom.begin(), custom.end());
  for (ScalarType dt : kFloatTypes)
    for (const auto& shape : kShapes)
      for (const auto& lc : layouts_4d(shape, dt))
        for (const auto& entry : ops) {  // (a plain variable: clang 14 cannot capture structured bindings)
          const auto& op = entry.second;
          expect_matches_reference([&] { return op(lc.tensor); }, dt,
                                   entry.first + " " + lc.name + " " + std::string(to_string(dt)));
        }
}

TEST(PointwiseConformance, BinaryOpsMatchReferenceAcrossLayoutPairs) {
  // Every binary row of the op table with a function (on positive operands, in every row's
  // domain), then forms with other arguments and operands by hand.
#define STRIDER_ROW(Enum, function, signature, ...) STRIDER_PAIR_##signature(function)
#define STRIDER_PAIR_Tensors(function) \
  {#function, [](const Tensor& a, const Tensor& b) { return function(abs(a) + 0.5, abs(b) + 0.5); }},
#define STRIDER_PAIR_TensorOrScalar(function) STRIDER_PAIR_Tensors(function)
#define STRIDER_PAIR_Alpha(function) STRIDER_PAIR_Tensors(function)
#define STRIDER_PAIR_None(function)
  std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
      STRIDER_BINARY_OPS(STRIDER_ROW)
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"add_alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 2.5); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, abs(b) + 0.5); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"where", [](const Tensor& a, const Tensor& b) { return where(gt(a, 0), a, b); }},
      {"addcmul", [](const Tensor& a, const Tensor& b) { return addcmul(a, b, a, 0.5); }},
      // The one-pass gradients (signature None): x spread over both tails (-9 .. 9).
      {"gelu_backward", [](const Tensor& a, const Tensor& b) { return ops::gelu_backward(a, b * 3.0); }},
      {"gelu_tanh_backward",
       [](const Tensor& a, const Tensor& b) { return ops::gelu_backward(a, b * 3.0, "tanh"); }},
      {"silu_backward", [](const Tensor& a, const Tensor& b) { return ops::silu_backward(a, b * 3.0); }},
      {"leaky_relu_backward", [](const Tensor& a, const Tensor& b) { return ops::leaky_relu_backward(a, b, 0.2); }},
      {"elu_backward", [](const Tensor& a, const Tensor& b) { return ops::elu_backward(a, b * 3.0, 0.7, 1.5, 0.5); }},
      {"selu_backward", [](const Tensor& a, const Tensor& b) { return ops::selu_backward(a, b * 3.0); }},
      {"softplus_backward",
       [](const Tensor& a, const Tensor& b) { return ops::softplus_backward(a, b * 8.0, 2.0, 10.0); }},
      {"hardtanh_backward", [](const Tensor& a, const Tensor& b) { return ops::hardtanh_backward(a, b, -0.5, 0.7); }},
      {"hardswish_backward", [](const Tensor& a, const Tensor& b) { return ops::hardswish_backward(a, b * 4.0); }},
      {"hardsigmoid_backward", [](const Tensor& a, const Tensor& b) { return ops::hardsigmoid_backward(a, b * 4.0); }},
      {"mish_backward", [](const Tensor& a, const Tensor& b) { return ops::mish_backward(a, b * 3.0); }},
  };
#undef STRIDER_ROW
  for (ScalarType dt : {kFloat, kBFloat16, kDouble}) {
    auto as = layouts_4d({2, 5, 6, 7}, dt, 1);
    auto bs = layouts_4d({2, 5, 6, 7}, dt, 2);
    for (const auto& a : as)
      for (const auto& b : bs)
        for (const auto& entry : ops) {
          const auto& op = entry.second;
          expect_matches_reference([&] { return op(a.tensor, b.tensor); }, dt,
                                   entry.first + "(" + a.name + ", " + b.name + ") " + std::string(to_string(dt)));
        }
  }
}

TEST(PointwiseConformance, BroadcastAndScalarOperands) {
  Tensor x = testing::sample({4, 8, 5, 5}, kFloat).to(MemoryFormat::ChannelsLast);
  Tensor bias = testing::sample({1, 8, 1, 1}, kFloat, 3);
  Tensor row = testing::sample({5}, kFloat, 4);
  for (auto f : std::vector<std::function<Tensor()>>{
           [&] { return add(x, bias); }, [&] { return mul(bias, x); }, [&] { return sub(x, row); },
           [&] { return x * 3.0; }, [&] { return 2.0 - x; }, [&] { return 1.0 / (abs(x) + 1.0); },
           [&] { return add(x, scalar_tensor(0.25)); }})
    expect_matches_reference(f, kFloat, "broadcast");
}

TEST(PointwiseConformance, IntegerAndBoolOps) {
  Tensor a = arange(0, 60).reshape({3, 4, 5}) - 30;
  Tensor b = clamp(abs(a), 1, 7);
  for (auto f : std::vector<std::function<Tensor()>>{
           [&] { return add(a, b); }, [&] { return mul(a.transpose(0, 2), b.transpose(0, 2)); },
           [&] { return abs(a); }, [&] { return neg(a); }, [&] { return eq(a, b); },
           [&] { return maximum(a, b); }, [&] { return logical_not(gt(a, 0)); },
           [&] { return div(a, b); }, [&] { return clamp(a, -3, 4); }})
    expect_matches_reference(f, kLong, "integer");
}

TEST(CopyConformance, EveryLayoutPairAndDtypeConversion) {
  for (ScalarType src_t : {kFloat, kDouble, kBFloat16, kHalf, kLong, kInt, kByte, kBool}) {
    for (ScalarType dst_t : {kFloat, kBFloat16, kLong, kBool}) {
      for (const auto& src : layouts_4d({2, 6, 5, 9}, src_t)) {
        for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
          auto run = [&] {
            Tensor dst = empty(src.tensor.sizes(), TensorOptions(dst_t).memory_format(f));
            dst.copy_(src.tensor);
            return dst;
          };
          expect_matches_reference(run, kDouble, "copy " + src.name + " " +
                                   std::string(to_string(src_t)) + "->" + std::string(to_string(dst_t)));
        }
      }
    }
  }
}

TEST(CopyConformance, LargeTransposeBothDirections) {
  // Big enough for the tiled transpose and the parallel split.
  Tensor nchw = testing::sample({3, 67, 29, 31}, kFloat);
  Tensor nhwc = nchw.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(nhwc, nchw, 0, 0));
  EXPECT_TRUE(all_close(nhwc.contiguous(), nchw, 0, 0));
  Tensor b16 = nchw.to(kBFloat16);
  Tensor b16_nhwc = b16.contiguous(MemoryFormat::ChannelsLast);  // the 16-bit register transposes
  EXPECT_TRUE(all_close(b16_nhwc, b16, 0, 0));
  EXPECT_TRUE(all_close(b16_nhwc.contiguous(), b16, 0, 0));
  Tensor d = nchw.to(kDouble).permute({2, 0, 3, 1}).contiguous();
  EXPECT_TRUE(all_close(d, nchw.permute({2, 0, 3, 1}), 0, 0));
}

TEST(ReduceConformance, SumMeanMaxVarOverDimsAndLayouts) {
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {2, 3}, {0, 2}, {1, 3}, {-1}};
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (const auto& lc : layouts_4d({3, 6, 7, 5}, dt)) {
      for (const auto& dims : dim_sets) {
        for (bool keep : {false, true}) {
          std::string what = lc.name + " " + std::string(to_string(dt)) + " keep=" + std::to_string(keep);
          expect_matches_reference([&] { return sum(lc.tensor, dims, keep); }, dt, "sum " + what);
          expect_matches_reference([&] { return mean(lc.tensor, dims, keep); }, dt, "mean " + what);
          expect_matches_reference([&] { return amax(lc.tensor, dims, keep); }, dt, "amax " + what);
          expect_matches_reference([&] { return var(lc.tensor, dims, 1, keep); }, dt, "var " + what);
        }
        if (dims.size() == 1) {
          expect_matches_reference([&] { return argmax(lc.tensor, dims[0]); }, kLong, "argmax " + lc.name);
          expect_matches_reference([&] { return max(lc.tensor, dims[0]).first; }, dt, "max " + lc.name);
        }
      }
    }
  }
}

// A reduction row called over `dims` with `keep`, by its signature (the others' defaults);
// OptionalDim rows take one dim.
#define STRIDER_CALL_Dims(f, t, dims, keep) f(t, dims, keep)
#define STRIDER_CALL_DimsDtype(f, t, dims, keep) f(t, dims, keep)
#define STRIDER_CALL_Correction(f, t, dims, keep) f(t, dims, 1, keep)
#define STRIDER_CALL_OptionalDim(f, t, dims, keep) \
  (dims.empty() ? f(t) : dims.size() == 1 ? f(t, dims[0], keep) : Tensor())

TEST(ReduceConformance, EveryRowOverDimsAndLayouts) {
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {2, 3}, {0, 2}, {1, 3}, {-1}};
  int rows = 0;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (const auto& lc : layouts_4d({3, 6, 7, 5}, dt)) {
      Tensor positive = abs(lc.tensor) + 0.5;  // prod stays finite
      for (const auto& dims : dim_sets) {
        for (bool keep : {false, true}) {
          std::string what = lc.name + " " + std::string(to_string(dt)) + " keep=" + std::to_string(keep);
#define STRIDER_ROW(Enum, function, name, signature, ...)                                              \
  ++rows;                                                                                              \
  expect_matches_reference(                                                                            \
      [&] {                                                                                            \
        Tensor out = STRIDER_CALL_##signature(function, positive, dims, keep);                         \
        return out.defined() ? out : zeros({1});                                                       \
      },                                                                                               \
      dt, #function " " + what);
          STRIDER_REDUCE_OPS(STRIDER_ROW)
#undef STRIDER_ROW
        }
      }
    }
  }
  EXPECT_GE(rows, 8);
}

// Summing down columns (dim 0 of [N, C], and the outer dims of a channels-last tensor) walks
// rows but keeps each output's order of additions: bit for bit the reference.
TEST(ReduceConformance, ColumnSumsAreBitwiseTheReference) {
  Tensor x = testing::sample({1000, 300}, kFloat) * 1000.0;
  Tensor cl = testing::sample({4, 33, 9, 7}, kFloat).contiguous(MemoryFormat::ChannelsLast);
  for (auto [t, dims] : {std::pair{x, std::vector<int64_t>{0}}, std::pair{cl, std::vector<int64_t>{0, 2, 3}}}) {
    Tensor fast = sum(t, dims), mean_fast = mean(t, dims);
    KernelPreferenceGuard guard(KernelPreference::Reference);
    EXPECT_TRUE(equal(fast, sum(t, dims)));
    EXPECT_TRUE(equal(mean_fast, mean(t, dims)));
  }
}

TEST(ReduceConformance, LongReductionSplitsAcrossThreads) {
  Tensor x = testing::sample({1 << 18}, kFloat);
  expect_matches_reference([&] { return sum(x); }, kDouble, "sum long");
  expect_matches_reference([&] { return argmax(x); }, kLong, "argmax long");
  expect_matches_reference([&] { return var(x); }, kFloat, "var long");
}

TEST(SoftmaxConformance, EveryDimAndLayout) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (const auto& lc : layouts_4d({2, 5, 6, 7}, dt)) {
      for (int64_t d = -4; d < 4; ++d) {
        expect_matches_reference([&] { return softmax(lc.tensor, d); }, dt, "softmax " + lc.name);
        expect_matches_reference([&] { return log_softmax(lc.tensor, d); }, dt, "log_softmax " + lc.name);
      }
    }
  }
}

}  // namespace
}  // namespace strider
