#include "kernels/copy.h"
#include "kernels/dnnl/context.h"
#include "kernels/matmul.h"
#include "kernels/scratch.h"

namespace strider::kernels::dnnl_ops {
namespace {

// oneDNN 2.x's float32 matmul reads a row-major [K, N] right operand (the gradient-input product
// dy @ W of a linear layer, the weight-gradient product's x) without packing it; once it outgrows
// the L2 cache it runs 10-14 points of the peak below the transposed layout, which it packs into
// blocks first (measured from 1M elements up: bench/gpt_gemms_bench.cpp, docs/benchmarks.md). A
// column-major copy costs less than that when the product has enough rows to amortize it (about
// 400 at 12% of the product time saved per element copied), so such an operand is handed over
// as one. Up to 8M elements: a bounded transient (32 MB), as large as was measured to pay.
constexpr int64_t kPackFromElements = int64_t{1} << 20, kPackUpToElements = int64_t{8} << 20;
constexpr int64_t kPackFromRows = 512;

Tensor packed_if_slow(const Tensor& a, const Tensor& w) {
  if (w.dtype() != kFloat || w.dim() != 2 || a.dim() != 2 || a.sizes()[0] < kPackFromRows) return w;
  const int64_t k = w.sizes()[0], n = w.sizes()[1];
  if (k * n < kPackFromElements || k * n > kPackUpToElements || w.strides()[1] != 1 || w.strides()[0] != n) return w;
  Tensor packed = scratch_strided({k, n}, {1, k}, kFloat);
  cpu::copy(packed, w);
  return packed;
}

// oneDNN 2.x's bfloat16 matmul copies a plain right operand into its blocked layout of k-step
// pairs inside the product (jit_brgemm_matmul_copy_b_bf16: 5.3% of a GPT-2-small bfloat16 step's
// samples). Reordered beforehand into the layout the primitive asks for (weights `any`), the
// products of such a step ran 3 points of the peak higher on the whole (bench/gpt_gemms_bench.cpp
// --dtype bfloat16, docs/benchmarks.md), the reorder counted. From 512 rows (as above) whatever
// the operand's size, up to the same 8M elements; a copy per product, not cached (a FULL_SHARD
// weight is gathered anew for its backward anyway).
bool reorders_bfloat16_operand(const Tensor& a, const Tensor& w) {
  if (w.dtype() != kBFloat16 || w.dim() != 2 || a.dim() != 2 || a.sizes()[0] < kPackFromRows) return false;
  return w.sizes()[0] * w.sizes()[1] <= kPackUpToElements;
}

// `w` in the layout the primitive was created to take, in memory `keep` holds.
dnnl::memory in_primitive_layout(const dnnl::primitive& prim, const dnnl::memory& w, Tensor& keep) {
  const dnnl::memory::desc want(*dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_weights_md, 0));
  if (want == w.get_desc()) return w;
  dnnl::memory reordered = allocate(want, keep);
  reorder_into(w, reordered);
  return reordered;
}

}  // namespace

void matmul(const Matmul& p) {
  const Tensor &out = p.out, &a = p.a, &bias = p.bias;
  const Tensor w = packed_if_slow(a, p.w);
  const bool reorder_w = reorders_bfloat16_operand(a, w);
  auto& cache = dnnl_ops::cache<dnnl::matmul>();
  KeyBuilder k("matmul");
  k.add(out).add(a).add(w).add(bias).add(int64_t{reorder_w});
  DimVector bias_sizes, bias_strides;
  if (bias.defined()) {
    bias_sizes = DimVector(out.dim(), 1);
    bias_sizes.back() = bias.sizes()[0];
    bias_strides = DimVector(out.dim(), 0);
    bias_strides.back() = bias.strides()[0];
  }
  const auto& prim = cache.get(k.str(), [&] {
    dnnl::memory::desc bd = bias.defined() ? desc_of(bias_sizes, bias_strides, bias.dtype()) : dnnl::memory::desc();
    const dnnl::memory::desc wd =
        reorder_w ? dnnl::memory::desc(dims_of(w.sizes()), data_type(w.dtype()), dnnl::memory::format_tag::any)
                  : desc_of(w);
    dnnl::matmul::desc d = bias.defined() ? dnnl::matmul::desc(desc_of(a), wd, bd, desc_of(out))
                                          : dnnl::matmul::desc(desc_of(a), wd, desc_of(out));
    return dnnl::matmul(dnnl::matmul::primitive_desc(d, attr(), engine()));
  });
  Tensor reordered_bytes;
  const dnnl::memory wm = reorder_w ? in_primitive_layout(prim, memory_of(w), reordered_bytes) : memory_of(w);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, memory_of(a)}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, memory_of(out)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, memory_of(desc_of(bias_sizes, bias_strides, bias.dtype()), bias));
  execute(prim, std::move(args));
}

}  // namespace strider::kernels::dnnl_ops
