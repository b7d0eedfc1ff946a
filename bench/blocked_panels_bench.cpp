// The right operands of a GPT-2-small layer's bfloat16 matmuls (2048 tokens) packed into the
// blocked layout oneDNN's brgemm asks for: oneDNN 2.6's reorder against kernels/cpu/blocked_panels.h,
// with a memcpy of the same bytes (the floor of any copy) alongside; medians of alternated rounds,
// one table row per operand, after a warm-up that checks both write the same bytes (issue 32 §2).
//
//   OMP_NUM_THREADS=1 build/bench/strider_bench_blocked_panels [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <strider/strider.h>

#include "kernels/cpu/blocked_panels.h"
#include "kernels/cpu_isa.h"
#include "kernels/dnnl/context.h"

namespace {

using namespace strider;
namespace dnnl_ops = kernels::dnnl_ops;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Operand {
  int64_t k, n;
  bool transposed;  // k contiguous: a weight [n, k] read as W^T
  const char* what;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  if (!kernels::cpu_has(kernels::Isa::avx512)) {
    std::fprintf(stderr, "strider_bench_blocked_panels: the packing kernel needs AVX-512\n");
    return 1;
  }
  const Operand operands[] = {{2048, 3072, false, "x of mlp.c_proj's weight gradient"},
                              {2048, 768, false, "x of the other weight gradients"},
                              {768, 3072, true, "W^T of mlp.c_fc's forward"},
                              {3072, 768, true, "W^T of mlp.c_proj's forward"},
                              {768, 2304, true, "W^T of attn.c_attn's forward"},
                              {768, 768, true, "W^T of attn.c_proj's forward"},
                              {3072, 768, false, "W of mlp.c_fc's input gradient"},
                              {768, 3072, false, "W of mlp.c_proj's input gradient"},
                              {2304, 768, false, "W of attn.c_attn's input gradient"},
                              {768, 768, false, "W of attn.c_proj's input gradient"}};
  std::printf("| operand (k x n) | oneDNN reorder, ms | ours, ms | memcpy, ms | reorder / ours | ours / memcpy |\n");
  std::printf("|---|---|---|---|---|---|\n");
  double total[3] = {0, 0, 0};
  for (const Operand& o : operands) {
    const auto t = dnnl::memory::data_type::bf16;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc a({2048, o.k}, t, tag::ab), w({o.k, o.n}, t, tag::any), c({2048, o.n}, t, tag::ab);
    const dnnl::memory::desc want =
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, w, c), dnnl_ops::engine()).weights_desc();
    const auto panels = dnnl_ops::blocked_panels_of(want);
    const Tensor src = randn({o.transposed ? o.n : o.k, o.transposed ? o.k : o.n}).to(kBFloat16);
    const int64_t row_stride = o.transposed ? 1 : o.n, col_stride = o.transposed ? o.k : 1;
    if (!panels || !kernels::cpu::pack_blocked_rejects(*panels, row_stride, col_stride).empty()) {
      std::fprintf(stderr, "strider_bench_blocked_panels: oneDNN asked for a layout the kernel does not take\n");
      return 1;
    }
    const dnnl::memory from(dnnl::memory::desc({o.k, o.n}, t, dnnl::memory::dims{row_stride, col_stride}),
                            dnnl_ops::engine(), src.data());
    const dnnl::memory to(want, dnnl_ops::engine());
    std::vector<char> copy(static_cast<size_t>(src.numel()) * 2);
    // A warm-up of each, and the check that both write the same bytes.
    dnnl_ops::reorder_into(from, to);
    std::vector<char> theirs(static_cast<const char*>(to.get_data_handle()),
                             static_cast<const char*>(to.get_data_handle()) + want.get_size());
    kernels::cpu::pack_blocked(src.data(), row_stride, col_stride, *panels, to.get_data_handle());
    std::memcpy(copy.data(), src.data(), copy.size());
    if (std::memcmp(theirs.data(), to.get_data_handle(), theirs.size()) != 0) {
      std::fprintf(stderr, "strider_bench_blocked_panels: the packed bytes differ from oneDNN's for %s\n", o.what);
      return 1;
    }
    std::vector<double> times[3];
    for (int r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      dnnl_ops::reorder_into(from, to);
      times[0].push_back(seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      kernels::cpu::pack_blocked(src.data(), row_stride, col_stride, *panels, to.get_data_handle());
      times[1].push_back(seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      std::memcpy(copy.data(), src.data(), copy.size());
      times[2].push_back(seconds_since(t0));
    }
    double m[3];
    for (int i = 0; i < 3; ++i) total[i] += m[i] = median(times[i]);
    std::printf("| %lld x %lld %s (%s) | %.3f | %.3f | %.3f | %.2f | %.2f |\n", static_cast<long long>(o.k),
                static_cast<long long>(o.n), o.transposed ? "transposed" : "row-major", o.what, m[0] * 1e3, m[1] * 1e3,
                m[2] * 1e3, m[0] / m[1], m[1] / m[2]);
  }
  std::printf("| all ten | %.3f | %.3f | %.3f | %.2f | %.2f |\n", total[0] * 1e3, total[1] * 1e3, total[2] * 1e3,
              total[0] / total[1], total[1] / total[2]);
}
