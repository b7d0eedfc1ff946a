#pragma once
// The entry points each instruction-set level of our auto-vectorized kernels provides. Every
// kernel source compiled per level (cmake/isa_kernels.cmake) defines its family's table in its
// level's namespace; cpu/isa_dispatch.cpp picks one level's tables from cpu_isa(), once.
#include "kernels/attention.h"
#include "kernels/copy.h"
#include "kernels/norm.h"
#include "kernels/pointwise.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"

namespace strider::kernels::cpu {

struct PointwiseKernels {
  void (*unary)(UnaryOp, const Tensor&, const Tensor&, const PointwiseArgs&);
  void (*binary)(BinaryOp, const Tensor&, const Tensor&, const Tensor&, const PointwiseArgs&);
  void (*where)(const Tensor&, const Tensor&, const Tensor&, const Tensor&);
  void (*addcmul)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double);
};
struct CopyKernels {
  void (*copy)(const Tensor&, const Tensor&);
  void (*fill)(const Tensor&, const Scalar&);
};
struct ReduceKernels {
  void (*reduce)(ReduceOp, const Tensor&, const Tensor&, const ReduceArgs&);
};
struct SoftmaxKernels {
  void (*softmax)(const Tensor&, const Tensor&, int64_t, bool);
};
struct AttentionKernels {
  void (*forward)(const AttentionForward&);
  void (*backward)(const AttentionBackward&);
  void (*forward_bf16)(const AttentionForward&);  // bfloat16 products: AVX512_BF16 CPUs only
  void (*backward_bf16)(const AttentionBackward&);
  void (*forward_amx)(const AttentionForward&);  // bfloat16 products on AMX tiles: amx_bf16 CPUs only
  void (*backward_amx)(const AttentionBackward&);
};
struct BatchNormInferenceKernels {
  void (*batch_norm_inference)(const BatchNormForward&);
};
struct BatchNormTrainingKernels {  // plain-layout float32/bfloat16 batches
  void (*forward)(const BatchNormForward&);
  void (*backward)(const BatchNormBackward&);
};
struct BatchNormChannelsLastKernels {  // channels-last float32/bfloat16 batches, training mode
  void (*forward)(const BatchNormForward&);
  void (*backward)(const BatchNormBackward&);
};

}  // namespace strider::kernels::cpu
