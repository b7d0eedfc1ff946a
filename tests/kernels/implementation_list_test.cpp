// The convolution implementation lists: every implementation that accepts a problem matches the
// reference (the list's last entry) in each layout and dtype, and verbose mode names the winner
// and each rejection with its reason.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "kernels/conv.h"
#include "kernels/cpu_isa.h"
#include "kernels/float32_detour.h"
#include "strider/ops/kernel_choice.h"
#include "support/compare.h"

namespace strider {
namespace {

using kernels::ConvParams;

ConvParams params() { return {.stride = {1, 2}, .padding = {1, 0}, .dilation = {1, 1}, .output_padding = {0, 0}}; }

Tensor make(IntArrayRef sizes, ScalarType dtype, MemoryFormat fmt) {
  return randn(sizes, kFloat).to(dtype).contiguous(fmt);
}

TEST(ConvImplementationList, EveryAcceptingImplementationMatchesTheReference) {
  manual_seed(4);
  for (ScalarType dtype : {kFloat, kBFloat16, kDouble})
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      SCOPED_TRACE(detail::str(dtype, " ", fmt));
      const ConvParams p = params();
      Tensor in = make({2, 8, 7, 9}, dtype, fmt), w = make({6, 8, 3, 3}, dtype, fmt), b = make({6}, dtype, MemoryFormat::Contiguous);
      Tensor go = make({2, 6, 7, 4}, dtype, fmt);
      const double tol = dtype == kBFloat16 ? 5e-2 : 1e-4;
      auto out_like = [&](IntArrayRef s) { return empty(s, TensorOptions().dtype(dtype).memory_format(fmt)); };
      const auto& fwd = kernels::conv_forward_implementations();
      Tensor want = out_like({2, 6, 7, 4});
      fwd.back().run({want, in, w, b, p});
      for (const auto& impl : fwd) {
        if (!impl.rejects({want, in, w, b, p}).empty()) continue;
        Tensor got = out_like({2, 6, 7, 4});
        impl.run({got, in, w, b, p});
        EXPECT_TRUE(testing::all_close(got, want, tol, tol)) << "forward " << impl.name;
      }
      const auto& bwd_in = kernels::conv_backward_input_implementations();
      Tensor want_gi = out_like(in.sizes());
      bwd_in.back().run({want_gi, go, w, p});
      for (const auto& impl : bwd_in) {
        if (!impl.rejects({want_gi, go, w, p}).empty()) continue;
        Tensor gi = out_like(in.sizes());
        impl.run({gi, go, w, p});
        EXPECT_TRUE(testing::all_close(gi, want_gi, tol, tol)) << "backward input " << impl.name;
      }
      const auto& bwd_w = kernels::conv_backward_weight_implementations();
      Tensor want_gw = out_like(w.sizes()), want_gb = empty({6}, dtype);
      bwd_w.back().run({want_gw, want_gb, in, go, p});
      for (const auto& impl : bwd_w) {
        if (!impl.rejects({want_gw, want_gb, in, go, p}).empty()) continue;
        Tensor gw = out_like(w.sizes()), gb = empty({6}, dtype);
        impl.run({gw, gb, in, go, p});
        EXPECT_TRUE(testing::all_close(gw, want_gw, tol * 10, tol * 10)) << "backward weight " << impl.name;
        EXPECT_TRUE(testing::all_close(gb, want_gb, tol * 10, tol * 10)) << "backward bias " << impl.name;
      }
    }
}

TEST(ConvImplementationList, VerboseNamesTheWinnerAndEveryRejection) {
  set_kernel_verbose(true);
  ::testing::internal::CaptureStderr();
  conv2d(randn({1, 2, 5, 5}, kDouble), randn({3, 2, 3, 3}, kDouble));
  conv2d(randn({1, 2, 5, 5}), randn({3, 2, 3, 3}));
  {
    KernelPreferenceGuard ref(KernelPreference::Reference);
    conv2d(randn({1, 2, 5, 5}), randn({3, 2, 3, 3}));
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_kernel_verbose(false);
  EXPECT_NE(log.find("strider: conv2d -> ref; onednn_nhwc rejected: only bfloat16 and float32 are computed by oneDNN; "
                     "onednn rejected: oneDNN computes float32 and bfloat16, not float64"),
            std::string::npos) << log;
  // Plain-layout float32 stays in its layout from AVX-512 up and goes to channels-last below it.
  const char* float32_choice =
      kernels::onednn_has_bfloat16()
          ? "strider: conv2d -> onednn; onednn_nhwc rejected: float32 has fast plain-layout kernels from AVX-512 up\n"
          : "strider: conv2d -> onednn_nhwc\n";
  EXPECT_NE(log.find(float32_choice), std::string::npos) << log;
  EXPECT_NE(log.find("strider: conv2d -> ref; onednn_nhwc rejected: the reference was requested; onednn rejected: the "
                     "reference was requested"),
            std::string::npos)
      << log;
}

// Autotune times oneDNN's candidates on the call's own buffers and keeps the fastest: every
// candidate is a correct implementation, so the results still match the reference, and verbose
// mode shows that more than one candidate was timed.
TEST(ConvImplementationList, AutotunePicksAmongOneDnnsImplementationsAndStaysCorrect) {
  manual_seed(5);
  empty_cache();  // primitives made before autotune was on keep oneDNN's first choice
  set_kernel_autotune(true);
  set_kernel_verbose(true);
  for (ScalarType dtype : {kFloat, kBFloat16})
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      SCOPED_TRACE(detail::str(dtype, " ", fmt));
      empty_cache();  // bfloat16 in float32 would reuse the float32 case's primitives untuned
      ::testing::internal::CaptureStderr();
      // Output rows of 20 pixels: on AMX, bfloat16 weight gradients of narrower ones are matmuls
      // (kernels/conv_as_matmul.h), and strided input gradients forward convolutions
      // (kernels/conv_phases.h), neither tuned here; so stride 1 there, stride 2 elsewhere.
      const DimVector stride = dtype == kBFloat16 && kernels::cpu_has(kernels::Isa::amx_bf16) ? DimVector{1, 1} : DimVector{2, 1};
      Tensor x = make({2, 16, 9, 20}, dtype, fmt).requires_grad_(true);
      Tensor w = make({8, 16, 3, 3}, dtype, fmt).requires_grad_(true);
      Tensor y = conv2d(x, w, Tensor(), stride, {1, 1});
      Tensor go = make(y.sizes(), dtype, fmt);
      y.backward(go);
      const std::string log = ::testing::internal::GetCapturedStderr();
      for (const char* op : {"conv_fwd", "conv_bwd_data", "conv_bwd_weights"}) {
        const size_t at = log.find(std::string("strider: ") + op + " autotune -> ");
        ASSERT_NE(at, std::string::npos) << op << " was not tuned:\n" << log;
        const std::string line = log.substr(at, log.find('\n', at) - at);
        size_t timed = 0;
        for (size_t p = line.find(" ms"); p != std::string::npos; p = line.find(" ms", p + 1)) ++timed;
        // Plain-layout float32 at this size has one (gemm-based) implementation; channels-last
        // (where bfloat16 computes in any case) has several from AVX-512 up. Below it (where
        // bfloat16 computes in float32) oneDNN 2.6 may offer only the gemm-based one.
        if ((fmt == MemoryFormat::ChannelsLast || dtype == kBFloat16) && kernels::onednn_has_bfloat16()) {
          EXPECT_GE(timed, 2u) << "only one candidate was timed: " << line;
        }
      }
      KernelPreferenceGuard ref(KernelPreference::Reference);
      Tensor xr = x.detach().to(kDouble).requires_grad_(true), wr = w.detach().to(kDouble).requires_grad_(true);
      Tensor yr = conv2d(xr, wr, Tensor(), stride, {1, 1});
      yr.backward(go.to(kDouble));
      const double tol = dtype == kBFloat16 ? 1e-1 : 1e-4;
      EXPECT_TRUE(testing::all_close(y.to(kDouble), yr, tol, tol));
      EXPECT_TRUE(testing::all_close(x.grad().to(kDouble), xr.grad(), tol, tol));
      EXPECT_TRUE(testing::all_close(w.grad().to(kDouble), wr.grad(), tol, tol));
    }
  set_kernel_verbose(false);
  set_kernel_autotune(false);
  empty_cache();
}

}  // namespace
}  // namespace strider
