// Reference elementwise kernels: the index walk plus <cmath>, computed in the op math type.
#include "kernels/op_dispatch.h"
#include "kernels/pointwise_functors.h"
#include "kernels/ref/index_walk.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {

void unary(UnaryOp op, const Tensor& out, const Tensor& in, const PointwiseArgs& args) {
  dispatch_all(in.dtype(), name(op), [&]<class T>() {
    using M = opmath_t<T>;
    dispatch_unary_op(op, [&]<UnaryOp OP>() {
      if constexpr (dtype_rule(OP) == DtypeRule::Bool) {
        for_each_element({&out, &in}, [&](char** p) {
          const M x = static_cast<M>(*reinterpret_cast<const T*>(p[1]));
          *reinterpret_cast<bool*>(p[0]) = static_cast<bool>(fn::exact_unary<OP, M>(x, args));
        });
      } else {
        STRIDER_INTERNAL_ASSERT(!needs_floating(OP) || std::is_floating_point_v<M>, name(OP), " with dtype ", in.dtype());
        for_each_element({&out, &in}, [&](char** p) {
          const M x = static_cast<M>(*reinterpret_cast<const T*>(p[1]));
          *reinterpret_cast<T*>(p[0]) = static_cast<T>(fn::exact_unary<OP, M>(x, args));
        });
      }
    });
  });
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const PointwiseArgs& args) {
  dispatch_all(a.dtype(), name(op), [&]<class T>() {
    using M = opmath_t<T>;
    dispatch_binary_op(op, [&]<BinaryOp OP>() {
      for_each_element({&out, &a, &b}, [&](char** p) {
        const M x = static_cast<M>(*reinterpret_cast<const T*>(p[1]));
        const M y = static_cast<M>(*reinterpret_cast<const T*>(p[2]));
        if constexpr (is_comparison(OP)) {
          *reinterpret_cast<bool*>(p[0]) = fn::exact_compare<OP, M>(x, y);
        } else if constexpr (std::is_same_v<T, bool>) {
          *reinterpret_cast<bool*>(p[0]) = OP == BinaryOp::Mul || OP == BinaryOp::Minimum ? (x && y) : (x || y);
        } else {
          *reinterpret_cast<T*>(p[0]) = static_cast<T>(fn::exact_binary<OP, M>(x, y, args));
        }
      });
    });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& x, const Tensor& y) {
  dispatch_all(out.dtype(), "where", [&]<class T>() {
    for_each_element({&out, &cond, &x, &y}, [&](char** p) {
      bool c = *reinterpret_cast<const bool*>(p[1]);
      *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(c ? p[2] : p[3]);
    });
  });
}

void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             double value) {
  dispatch_all(out.dtype(), "addcmul", [&]<class T>() {
    using M = opmath_t<T>;
    if constexpr (!std::is_same_v<T, bool>) {
      for_each_element({&out, &self, &t1, &t2}, [&](char** p) {
        M a = static_cast<M>(*reinterpret_cast<const T*>(p[1]));
        M b = static_cast<M>(*reinterpret_cast<const T*>(p[2]));
        M c = static_cast<M>(*reinterpret_cast<const T*>(p[3]));
        *reinterpret_cast<T*>(p[0]) = static_cast<T>(a + static_cast<M>(value) * b * c);
      });
    }
  });
}

}  // namespace strider::kernels::ref
