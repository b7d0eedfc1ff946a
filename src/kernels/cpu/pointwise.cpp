// Vectorized, OpenMP-parallel elementwise kernels.
#include <cmath>

#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/cpu/inner_loops.h"
#include "kernels/op_dispatch.h"
#include "kernels/pointwise_functors.h"
#include "kernels/strided_loop.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

void unary(UnaryOp op, const Tensor& out, const Tensor& in, const PointwiseArgs& args) {
  LoopPlan plan = make_loop_plan({&out, &in});
  dispatch_all(in.dtype(), name(op), [&]<class T>() {
    using M = opmath_t<T>;
    dispatch_unary_op(op, [&]<UnaryOp OP>() {
      const PointwiseArgs a = args;
      if constexpr (dtype_rule(OP) == DtypeRule::Bool) {
        run_plan(plan, [a](char** p, const int64_t* s, int64_t n) {
          unary_inner<bool, T>(p, s, n, [&a](M x) { return static_cast<bool>(fn::exact_unary<OP, M>(x, a)); });
        });
      } else if constexpr (needs_floating(OP) && !std::is_floating_point_v<M>) {
        STRIDER_INTERNAL_ASSERT(false, name(OP), " reached the kernel with dtype ", in.dtype());
      } else {
        run_plan(plan, [a](char** p, const int64_t* s, int64_t n) {
          if constexpr (std::is_same_v<M, float>) {
            unary_inner<T, T>(p, s, n, [&a](float x) { return fn::fast_unary<OP>(x, a); });
          } else {
            unary_inner<T, T>(p, s, n, [&a](M x) { return fn::exact_unary<OP, M>(x, a); });
          }
        });
      }
    });
  });
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const PointwiseArgs& args) {
  LoopPlan plan = make_loop_plan({&out, &a, &b});
  dispatch_all(a.dtype(), name(op), [&]<class T>() {
    using M = opmath_t<T>;
    dispatch_binary_op(op, [&]<BinaryOp OP>() {
      const PointwiseArgs pa = args;
      if constexpr (is_comparison(OP)) {
        run_plan(plan, [](char** p, const int64_t* s, int64_t n) {
          binary_inner<bool, T>(p, s, n, [](M x, M y) { return fn::exact_compare<OP, M>(x, y); });
        });
      } else if constexpr (needs_floating(OP) && !std::is_floating_point_v<M>) {
        STRIDER_INTERNAL_ASSERT(false, name(OP), " reached the kernel with dtype ", a.dtype());
      } else if constexpr (std::is_same_v<T, bool>) {
        run_plan(plan, [pa](char** p, const int64_t* s, int64_t n) {
          binary_inner<bool, bool>(p, s, n, [&pa](bool x, bool y) -> bool {
            return OP == BinaryOp::Mul || OP == BinaryOp::Minimum ? (x && y) : (x || y);
          });
        });
      } else if constexpr (OP == BinaryOp::Add || OP == BinaryOp::Sub) {
        // alpha hoisted out of the loop so the common alpha = 1 case is a plain add. x + alpha * y
        // rounds once, as PyTorch's vectorized fmadd does, at every ISA level: left to the
        // compiler it would be contracted where the level has FMA and rounded twice where not.
        const M alpha = static_cast<M>(OP == BinaryOp::Add ? pa.alpha : -pa.alpha);
        run_plan(plan, [alpha](char** p, const int64_t* s, int64_t n) {
          if (alpha == M(1))
            binary_inner<T, T>(p, s, n, [](M x, M y) { return static_cast<M>(x + y); });
          else if constexpr (std::is_floating_point_v<M>)
            binary_inner<T, T>(p, s, n, [alpha](M x, M y) { return std::fma(alpha, y, x); });
          else
            binary_inner<T, T>(p, s, n, [alpha](M x, M y) { return static_cast<M>(x + alpha * y); });
        });
      } else {
        run_plan(plan, [pa](char** p, const int64_t* s, int64_t n) {
          if constexpr (std::is_same_v<M, float>) {
            binary_inner<T, T>(p, s, n, [&pa](float x, float y) { return fn::fast_binary<OP>(x, y, pa); });
          } else {
            binary_inner<T, T>(p, s, n, [&pa](M x, M y) { return fn::exact_binary<OP, M>(x, y, pa); });
          }
        });
      }
    });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& x, const Tensor& y) {
  LoopPlan plan = make_loop_plan({&out, &cond, &x, &y});
  dispatch_all(out.dtype(), "where", [&]<class T>() {
    using M = opmath_t<T>;
    run_plan(plan, [](char** p, const int64_t* s, int64_t n) {
      ternary_inner<T, bool, T, T>(p, s, n, [](bool c, M a, M b) { return c ? a : b; });
    });
  });
}

void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             double value) {
  LoopPlan plan = make_loop_plan({&out, &self, &t1, &t2});
  dispatch_all(out.dtype(), "addcmul", [&]<class T>() {
    using M = opmath_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      STRIDER_CHECK(false, "addcmul", "bool tensors are not supported; convert to a numeric dtype");
    } else {
      const M v = static_cast<M>(value);
      run_plan(plan, [v](char** p, const int64_t* s, int64_t n) {
        ternary_inner<T, T, T, T>(p, s, n, [v](M a, M b, M c) { return static_cast<M>(a + v * b * c); });
      });
    }
  });
}

extern const PointwiseKernels pointwise_kernels{&unary, &binary, &where, &addcmul};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
