// Kernels chosen at run time: STRIDER_MAX_CPU_ISA caps the level, a bad value is a named error,
// an implementation that declines at run time hands the call to the next one, and bfloat16 runs
// on every CPU (natively where oneDNN has bfloat16 kernels, through float32 below AVX-512). The
// whole suite also runs capped at avx2 (tests/CMakeLists.txt), where the other branch is taken.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "kernels/cpu_isa.h"
#include "kernels/dnnl/context.h"
#include "kernels/float32_detour.h"
#include "kernels/implementation_list.h"
#include "strider/ops/kernel_choice.h"
#include "support/compare.h"

namespace strider {
namespace {

using kernels::Isa;

TEST(CpuIsa, TheCapLowersTheLevelButNeverRaisesIt) {
  EXPECT_EQ(kernels::capped_isa(nullptr, Isa::avx512_bf16), Isa::avx512_bf16);
  EXPECT_EQ(kernels::capped_isa("", Isa::avx512), Isa::avx512);
  EXPECT_EQ(kernels::capped_isa("avx2", Isa::avx512_bf16), Isa::avx2);
  EXPECT_EQ(kernels::capped_isa("avx512", Isa::avx512_bf16), Isa::avx512);
  EXPECT_EQ(kernels::capped_isa("avx512_bf16", Isa::avx2), Isa::avx2);
  EXPECT_EQ(kernels::capped_isa("baseline", Isa::avx2), Isa::baseline);
  EXPECT_EQ(kernels::capped_isa("avx512_bf16", Isa::amx_bf16), Isa::avx512_bf16);
  EXPECT_EQ(kernels::capped_isa("amx_bf16", Isa::amx_bf16), Isa::amx_bf16);
  EXPECT_EQ(kernels::capped_isa("amx_bf16", Isa::avx512), Isa::avx512);
  try {
    kernels::capped_isa("AVX2-ish", Isa::avx512);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("STRIDER_MAX_CPU_ISA"), std::string::npos) << what;
    EXPECT_NE(what.find("'AVX2-ish'"), std::string::npos) << what;
    EXPECT_NE(what.find("avx2, avx512, avx512_bf16, amx_bf16"), std::string::npos) << what;
  }
  EXPECT_LE(kernels::cpu_isa(), kernels::detected_cpu_isa());
  EXPECT_EQ(cpu_isa_name(), kernels::isa_name(kernels::cpu_isa()));
}

// oneDNN runs at the capped level, never above it: on an AMX CPU capped at avx512_bf16 (as the
// kernels_capped_avx512_bf16 run is) its bfloat16 kernels must not use the tiles, so that one
// machine runs the paths a CPU without them takes. Uncapped, oneDNN uses all the level has.
TEST(CpuIsa, OneDnnRunsAtTheCappedLevel) {
  const std::string in_use = kernels::dnnl_ops::isa_in_use();
  Isa onednn = Isa::baseline;
  for (Isa level : {Isa::baseline, Isa::avx2, Isa::avx512, Isa::avx512_bf16, Isa::amx_bf16})
    if (in_use == kernels::isa_name(level)) onednn = level;
  EXPECT_EQ(in_use, kernels::isa_name(onednn)) << "oneDNN's level has no strider name";
  EXPECT_EQ(onednn, kernels::cpu_isa()) << "oneDNN runs at " << in_use << ", strider at " << cpu_isa_name();
}

TEST(ImplementationList, AnImplementationThatDeclinesHandsTheCallToTheNext) {
  struct Problem {
    int* ran_by;
  };
  const kernels::ImplementationList<Problem> list = {
      {"picky", [](const Problem&) { return std::string(); },
       [](const Problem&) { throw kernels::ImplementationDeclined("no primitive for this CPU"); }},
      {"ref", [](const Problem&) { return std::string(); }, [](const Problem& p) { *p.ran_by = 2; }},
  };
  int ran_by = 0;
  ::testing::internal::CaptureStderr();
  kernels::run_first("toy", list, Problem{&ran_by}, {.verbose = true});
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ran_by, 2);
  EXPECT_NE(log.find("strider: toy -> ref; picky declined: no primitive for this CPU"), std::string::npos) << log;
}

// bfloat16 convolution, matmul, normalization and pooling run on every CPU and say in the log
// which way they went: natively where oneDNN has bfloat16 kernels, else in float32; batch norm
// of a plain-layout batch in training mode in strider's own kernel everywhere.
TEST(BFloat16EveryCpu, TrainingOpsRunAndTheLogSaysHow) {
  manual_seed(3);
  set_kernel_verbose(true);
  ::testing::internal::CaptureStderr();
  Tensor x = randn({2, 4, 6, 6}).to(kBFloat16).requires_grad_(true);
  Tensor w = randn({5, 4, 3, 3}).to(kBFloat16).requires_grad_(true);
  Tensor y = conv2d(x, w);
  Tensor z = max_pool2d(y, {2, 2});
  Tensor bn = batch_norm(z, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
  Tensor h = matmul(bn.flatten(1), randn({20, 3}).to(kBFloat16));
  Tensor ln = nn::functional::layer_norm(h, {3}).to(kFloat);
  Tensor loss = (ln * ln).sum();
  loss.backward();
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_kernel_verbose(false);
  ASSERT_TRUE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(x.grad().dtype(), kBFloat16);
  EXPECT_TRUE(std::isfinite(loss.item<float>()));
  // The same computation in float32 agrees to bfloat16's precision.
  Tensor xf = x.detach().to(kFloat), wf = w.detach().to(kFloat);
  EXPECT_TRUE(testing::all_close(y.to(kFloat), conv2d(xf, wf), 5e-2, 5e-2));
  for (const char* op : {"batch_norm -> cpu_plain", "batch_norm_backward -> cpu_plain"})
    EXPECT_NE(log.find(op), std::string::npos) << op << "\n" << log;
  if (kernels::onednn_has_bfloat16()) {
    EXPECT_NE(log.find("conv2d -> onednn"), std::string::npos) << log;
    EXPECT_EQ(log.find("-> onednn_f32"), std::string::npos) << log;
  } else {
    for (const char* op : {"conv2d -> onednn_f32", "mm -> onednn_f32", "layer_norm -> onednn_f32",
                           "max_pool2d -> onednn_f32", "pool_backward -> onednn_f32", "layer_norm_backward -> onednn_f32"})
      EXPECT_NE(log.find(op), std::string::npos) << op << "\n" << log;
    EXPECT_NE(log.find("onednn rejected: oneDNN has no bfloat16 kernels for this CPU's instruction set"),
              std::string::npos)
        << log;
  }
}

}  // namespace
}  // namespace strider
