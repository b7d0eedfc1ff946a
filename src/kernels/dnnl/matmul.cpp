#include <algorithm>
#include <cstdio>
#include <string>

#include "kernels/cpu/blocked_panels.h"
#include "kernels/dnnl/context.h"
#include "kernels/matmul.h"

namespace strider::kernels::dnnl_ops {
namespace {

// Two kinds of right operand run faster reordered beforehand into the layout the primitive asks
// for (weights `any`), the reorder counted (bench/gpt_gemms_bench.cpp, docs/benchmarks.md):
// float32 in row-major [K, N] from 1M elements (the gradient-input product dy @ W, the weight
// gradient's x), which oneDNN 2.x reads unpacked, 10-14 points of the peak slower; and bfloat16 in
// any plain layout, which it packs inside every product. The copy is kernels/cpu/blocked_panels.h's
// where it can take the source, else oneDNN's reorder. From 512 rows, to amortize it; up to 8M
// elements, a bounded transient (32 MB); a copy per product, not cached: FULL_SHARD gathers a
// weight anew anyway.
constexpr int64_t kReorderFromRows = 512, kReorderUpToElements = int64_t{8} << 20;
constexpr int64_t kReorderFloatFromElements = int64_t{1} << 20;

bool reorders_right_operand(const Tensor& a, const Tensor& w) {
  if (w.dim() != 2 || a.dim() != 2 || a.sizes()[0] < kReorderFromRows) return false;
  const int64_t k = w.sizes()[0], n = w.sizes()[1];
  if (k * n > kReorderUpToElements) return false;
  if (w.dtype() == kBFloat16) return true;
  return w.dtype() == kFloat && k * n >= kReorderFloatFromElements && w.strides()[1] == 1 && w.strides()[0] == n;
}

// Note [size-1 strides of a matrix operand]: the stride of a size-1 dim addresses nothing, but
// oneDNN 2.6's gemm-based matmul reads it: a [6, 1] operand with strides (1, 3) (a channels-last
// NC11 input folded to [N*C, 1] by linear) is taken as column-major with leading dimension 3 < 6,
// and the primitive fails when it runs. oneDNN's own primitive cache, meanwhile, ignores size-1
// strides when it compares descriptors, so it then handed that failing primitive to every later
// [6, 1] operand, contiguous ones too. So each operand is described with its size-1 strides
// chosen from its sizes and other strides alone: the same bytes always get the same valid
// descriptor, whatever strides the size-1 dims happened to carry.
DimVector matrix_strides(const Tensor& t) {
  DimVector st(t.strides().begin(), t.strides().end());
  const IntArrayRef sz = t.sizes();
  const int64_t r = t.dim() - 2, c = t.dim() - 1;
  if (sz[r] == 1 && sz[c] == 1) {
    st[r] = st[c] = 1;
  } else if (sz[c] == 1) {  // one column: column-major with ld = rows, or row-major with the rows' stride as ld
    st[c] = st[r] == 1 ? sz[r] : 1;
  } else if (sz[r] == 1) {  // one row: row-major with ld = columns, or column-major with the columns' stride
    st[r] = st[c] == 1 ? sz[c] : 1;
  }
  int64_t extent = std::max({int64_t{1}, st[r] * sz[r], st[c] * sz[c]});
  for (int64_t d = r - 1; d >= 0; --d) {  // a batch of 1 steps past the whole matrix
    if (sz[d] == 1) st[d] = extent;
    extent = std::max(extent, st[d] * sz[d]);
  }
  return st;
}

dnnl::memory::desc matrix_desc_of(const Tensor& t) { return desc_of(t.sizes(), matrix_strides(t), t.dtype()); }
dnnl::memory matrix_memory_of(const Tensor& t) { return memory_of(matrix_desc_of(t), t); }

// `w` in the layout the primitive was created to take, in memory `keep` holds: packed by
// kernels/cpu/blocked_panels.h where it can, else by oneDNN's reorder (the same bytes, slower).
dnnl::memory in_primitive_layout(const dnnl::primitive& prim, const Tensor& w, Tensor& keep) {
  const dnnl::memory::desc want(*dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_weights_md, 0));
  const dnnl::memory user = matrix_memory_of(w);
  if (want == user.get_desc()) return user;
  dnnl::memory reordered = allocate(want, keep);
  const std::optional<cpu::BlockedPanels> panels = blocked_panels_of(want);
  const int64_t row_stride = w.strides()[0], col_stride = w.strides()[1];
  const std::string rejected = panels ? cpu::pack_blocked_rejects(*panels, row_stride, col_stride)
                                      : "oneDNN asked for a layout it does not write";
  if (rejected.empty()) {
    cpu::pack_blocked(w.data(), row_stride, col_stride, *panels, reordered.get_data_handle());
    return reordered;
  }
  if (Context::process().kernel_verbose)
    std::fprintf(stderr, "strider: matmul right operand -> oneDNN reorder; blocked_panels rejected: %s\n",
                 rejected.c_str());
  reorder_into(user, reordered);
  return reordered;
}

}  // namespace

void matmul(const Matmul& p) {
  const Tensor &out = p.out, &a = p.a, &bias = p.bias;
  const Tensor& w = p.w;
  const bool reorder_w = reorders_right_operand(a, w);
  auto& cache = dnnl_ops::cache<dnnl::matmul>();
  KeyBuilder k("matmul");
  for (const Tensor* t : {&out, &a, &w})  // what the descriptors say (Note [size-1 strides of a matrix operand])
    k.add(t->sizes()).add(matrix_strides(*t)).add(static_cast<int64_t>(t->dtype()));
  k.add(bias).add(int64_t{reorder_w});
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
                  : matrix_desc_of(w);
    dnnl::matmul::desc d = bias.defined() ? dnnl::matmul::desc(matrix_desc_of(a), wd, bd, matrix_desc_of(out))
                                          : dnnl::matmul::desc(matrix_desc_of(a), wd, matrix_desc_of(out));
    return dnnl::matmul(dnnl::matmul::primitive_desc(d, attr(), engine()));
  });
  Tensor reordered_bytes;
  const dnnl::memory wm = reorder_w ? in_primitive_layout(prim, w, reordered_bytes) : matrix_memory_of(w);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, matrix_memory_of(a)}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, matrix_memory_of(out)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, memory_of(desc_of(bias_sizes, bias_strides, bias.dtype()), bias));
  execute(prim, std::move(args));
}

}  // namespace strider::kernels::dnnl_ops
