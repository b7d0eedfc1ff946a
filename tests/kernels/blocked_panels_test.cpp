// kernels/cpu/blocked_panels.h packs a matmul's right operand into the layout oneDNN asks for:
// byte for byte what oneDNN's own reorder writes, padding included, over every source it takes
// (row-major with any row stride, bfloat16 transposed) and shapes that end inside blocks; what it
// declines is named, and the matmul then falls back to oneDNN's reorder with the same result.
#include <gtest/gtest.h>
#include <strider/ops/linear.h>
#include <strider/ops/view.h>
#include <strider/strider.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/blocked_panels.h"
#include "kernels/cpu_isa.h"
#include "kernels/dnnl/context.h"
#include "kernels/matmul.h"
#include "support/compare.h"

namespace strider {
namespace {

namespace cpu = kernels::cpu;
namespace dnnl_ops = kernels::dnnl_ops;
using tag = dnnl::memory::format_tag;

// The right-operand layout a oneDNN matmul of m x k by k x n picks when left to choose.
dnnl::memory::desc wanted_layout(int64_t m, int64_t k, int64_t n, dnnl::memory::data_type t) {
  const dnnl::memory::desc a({m, k}, t, tag::ab), w({k, n}, t, tag::any), c({m, n}, t, tag::ab);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, w, c), dnnl_ops::engine()).weights_desc();
}

struct Source {
  const char* name;
  bool transposed;    // k contiguous (a transposed row-major [n, k] matrix)
  int64_t extra = 0;  // elements past the contiguous extent in each outer row
};

void check(int64_t k, int64_t n, ScalarType dtype, Source src, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message() << "k=" << k << " n=" << n << (dtype == kFloat ? " float32 " : " bfloat16 ") << src.name);
  const auto t = dnnl_ops::data_type(dtype);
  const dnnl::memory::desc want = wanted_layout(1024, k, n, t);
  const auto panels = dnnl_ops::blocked_panels_of(want);
  ASSERT_TRUE(panels.has_value()) << "oneDNN asked for a layout blocked_panels_of does not describe";
  const int64_t size = dtype == kFloat ? 4 : 2;
  const int64_t outer = src.transposed ? n : k, inner = src.transposed ? k : n, ld = inner + src.extra;
  std::vector<char> bytes(outer * ld * size);
  std::uniform_int_distribution<int> byte(0, 255);
  for (char& c : bytes) c = static_cast<char>(byte(rng));
  for (size_t i = size - 1; i < bytes.size(); i += size) bytes[i] &= 0x3f;  // finite values
  const int64_t row_stride = src.transposed ? 1 : ld, col_stride = src.transposed ? ld : 1;
  ASSERT_EQ(cpu::pack_blocked_rejects(*panels, row_stride, col_stride), "");

  const dnnl::memory::desc user({k, n}, t, dnnl::memory::dims{row_stride, col_stride});
  const dnnl::memory from(user, dnnl_ops::engine(), bytes.data());
  const dnnl::memory by_onednn(want, dnnl_ops::engine());
  std::vector<char> ours(want.get_size(), 0x5a);
  dnnl_ops::reorder_into(from, by_onednn);
  cpu::pack_blocked(bytes.data(), row_stride, col_stride, *panels, ours.data());
  EXPECT_EQ(std::memcmp(ours.data(), by_onednn.get_data_handle(), ours.size()), 0);
}

TEST(BlockedPanels, PacksTheBytesOneDnnsReorderWrites) {
  if (!kernels::cpu_has(kernels::Isa::avx512)) GTEST_SKIP() << "packing needs AVX-512 (oneDNN's reorder runs here)";
  std::mt19937 rng(7);
  const Source row_major{"row-major", false}, strided{"row-major, rows 24 elements apart beyond", false, 24},
      transposed{"transposed", true}, transposed_strided{"transposed, rows 6 elements apart beyond", true, 6};
  for (auto [k, n] : {std::pair<int64_t, int64_t>{768, 3072}, {2048, 768}, {64, 64}, {1000, 1000}, {33, 17},
                      {1, 5}, {130, 200}}) {
    check(k, n, kFloat, row_major, rng);
    check(k, n, kFloat, strided, rng);
    if (!dnnl_ops::supports(kBFloat16)) continue;
    check(k, n, kBFloat16, row_major, rng);
    check(k, n, kBFloat16, strided, rng);
    if (k % 2 == 0) {
      check(k, n, kBFloat16, transposed, rng);
      check(k, n, kBFloat16, transposed_strided, rng);
    }
  }
}

TEST(BlockedPanels, NamesWhatItDeclines) {
  cpu::BlockedPanels bf16{.rows = 64, .cols = 64, .row_block = 32, .col_block = 64, .row_block_stride = 2048,
                          .col_block_stride = 4096, .element_size = 2};
  if (!kernels::cpu_has(kernels::Isa::avx512)) {
    EXPECT_NE(cpu::pack_blocked_rejects(bf16, 64, 1).find("AVX-512"), std::string::npos);
    return;
  }
  EXPECT_EQ(cpu::pack_blocked_rejects(bf16, 64, 1), "");
  EXPECT_EQ(cpu::pack_blocked_rejects(bf16, 1, 64), "");
  EXPECT_NE(cpu::pack_blocked_rejects(bf16, 1, 63), "");   // pairs would straddle columns
  EXPECT_NE(cpu::pack_blocked_rejects(bf16, 2, 128), "");  // neither dimension contiguous
  cpu::BlockedPanels f32 = bf16;
  f32.element_size = 4;
  f32.row_block = 16;
  f32.row_block_stride = 1024;
  f32.col_block_stride = 4096;
  EXPECT_EQ(cpu::pack_blocked_rejects(f32, 64, 1), "");
  EXPECT_NE(cpu::pack_blocked_rejects(f32, 1, 64), "");  // float32 transposed: oneDNN's reorder
  f32.col_block_stride = 2048;                           // blocks would overlap
  EXPECT_NE(cpu::pack_blocked_rejects(f32, 64, 1), "");
}

// Through the matmul: a bfloat16 right operand packed here, and one the packer declines (a
// transposed operand with an odd number of rows between columns), both match the reference.
TEST(BlockedPanels, MatmulsWithPackedAndDeclinedOperandsAgree) {
  if (!dnnl_ops::supports(kBFloat16)) GTEST_SKIP() << "no oneDNN bfloat16 matmul on this CPU";
  manual_seed(3);
  for (int64_t k : {768, 767}) {
    SCOPED_TRACE(::testing::Message() << "k=" << k);
    const Tensor a = randn({600, k}).to(kBFloat16), w_rows = randn({200, k}).to(kBFloat16);
    const Tensor w = ops::t(w_rows);  // [k, 200], k contiguous
    Tensor out = empty({600, 200}, kBFloat16), expected = empty({600, 200}, kBFloat16);
    kernels::dnnl_ops::matmul({out, a, w, Tensor()});
    kernels::ref::matmul({expected, a, w, Tensor()});
    EXPECT_TRUE(testing::all_close(out.to(kFloat), expected.to(kFloat), 2e-2, 2e-2));
  }
}

}  // namespace
}  // namespace strider
