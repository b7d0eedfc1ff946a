// The one place our per-level kernels are chosen: each family's table comes from the level
// cpu_isa() names (capped by STRIDER_MAX_CPU_ISA), looked up once. The cpu:: entry points the
// implementation lists call forward through it. A STRIDER_NATIVE build, or one by a compiler
// other than GCC (no -fno-weak: cmake/isa_kernels.cmake), compiles the kernels once, with the
// build's own flags, and every level uses that copy.
#include "kernels/cpu/kernel_tables.h"
#include "kernels/cpu_isa.h"

namespace strider::kernels::cpu {

#define STRIDER_DECLARE_TABLES(level)                                            \
  namespace level {                                                              \
  extern const PointwiseKernels pointwise_kernels;                               \
  extern const CopyKernels copy_kernels;                                         \
  extern const ReduceKernels reduce_kernels;                                     \
  extern const SoftmaxKernels softmax_kernels;                                   \
  extern const AttentionKernels attention_kernels;                               \
  extern const BatchNormInferenceKernels batch_norm_inference_kernels;           \
  extern const BatchNormTrainingKernels batch_norm_training_kernels;             \
  extern const BatchNormChannelsLastKernels batch_norm_channels_last_kernels;    \
  }
#if STRIDER_NATIVE_KERNELS
STRIDER_DECLARE_TABLES(isa_native)
#define STRIDER_PICK(table) (isa_native::table)
#else
STRIDER_DECLARE_TABLES(isa_baseline)
STRIDER_DECLARE_TABLES(isa_avx2)
STRIDER_DECLARE_TABLES(isa_avx512)
#define STRIDER_PICK(table) (pick(isa_baseline::table, isa_avx2::table, isa_avx512::table))
#endif
#undef STRIDER_DECLARE_TABLES

namespace {

// avx512_bf16 and amx_bf16 run the avx512 copy; an entry that needs vdpbf16ps or the AMX tiles
// (attention's bfloat16 block products) is an implementation-list entry of its own that rejects
// other CPUs.
template <class Table>
[[maybe_unused]] const Table& pick(const Table& baseline, const Table& avx2, const Table& avx512) {
  switch (cpu_isa()) {
    case Isa::baseline: return baseline;
    case Isa::avx2: return avx2;
    case Isa::avx512:
    case Isa::avx512_bf16:
    case Isa::amx_bf16: return avx512;
  }
  return baseline;
}

const PointwiseKernels& pointwise() {
  static const PointwiseKernels& t = STRIDER_PICK(pointwise_kernels);
  return t;
}
const CopyKernels& copies() {
  static const CopyKernels& t = STRIDER_PICK(copy_kernels);
  return t;
}
const ReduceKernels& reductions() {
  static const ReduceKernels& t = STRIDER_PICK(reduce_kernels);
  return t;
}
const SoftmaxKernels& softmaxes() {
  static const SoftmaxKernels& t = STRIDER_PICK(softmax_kernels);
  return t;
}
const AttentionKernels& attentions() {
  static const AttentionKernels& t = STRIDER_PICK(attention_kernels);
  return t;
}
const BatchNormInferenceKernels& batch_norms() {
  static const BatchNormInferenceKernels& t = STRIDER_PICK(batch_norm_inference_kernels);
  return t;
}
const BatchNormTrainingKernels& batch_norms_training() {
  static const BatchNormTrainingKernels& t = STRIDER_PICK(batch_norm_training_kernels);
  return t;
}
const BatchNormChannelsLastKernels& batch_norms_channels_last() {
  static const BatchNormChannelsLastKernels& t = STRIDER_PICK(batch_norm_channels_last_kernels);
  return t;
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& in, const PointwiseArgs& args) {
  pointwise().unary(op, out, in, args);
}
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const PointwiseArgs& args) {
  pointwise().binary(op, out, a, b, args);
}
void where(const Tensor& out, const Tensor& cond, const Tensor& x, const Tensor& y) {
  pointwise().where(out, cond, x, y);
}
void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             double value) {
  pointwise().addcmul(out, self, t1, t2, value);
}
void copy(const Tensor& dst, const Tensor& src) { copies().copy(dst, src); }
void fill(const Tensor& dst, const Scalar& value) { copies().fill(dst, value); }
void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const ReduceArgs& args) {
  reductions().reduce(op, out, in, args);
}
void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  softmaxes().softmax(out, in, dim, log);
}
void attention_forward(const AttentionForward& p) { attentions().forward(p); }
void attention_backward(const AttentionBackward& p) { attentions().backward(p); }
void attention_forward_bf16(const AttentionForward& p) { attentions().forward_bf16(p); }
void attention_backward_bf16(const AttentionBackward& p) { attentions().backward_bf16(p); }
void attention_forward_amx(const AttentionForward& p) { attentions().forward_amx(p); }
void attention_backward_amx(const AttentionBackward& p) { attentions().backward_amx(p); }
void batch_norm_inference(const BatchNormForward& p) { batch_norms().batch_norm_inference(p); }
void batch_norm_training_forward(const BatchNormForward& p) { batch_norms_training().forward(p); }
void batch_norm_training_backward(const BatchNormBackward& p) { batch_norms_training().backward(p); }
void batch_norm_channels_last_forward(const BatchNormForward& p) { batch_norms_channels_last().forward(p); }
void batch_norm_channels_last_backward(const BatchNormBackward& p) { batch_norms_channels_last().backward(p); }

}  // namespace strider::kernels::cpu
