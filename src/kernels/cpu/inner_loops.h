#pragma once
// Inner loops for the cpu elementwise kernels: a unit-stride loop the compiler vectorizes (omp
// simd), variants where one input is a broadcast scalar (stride 0), and a strided fallback.
// `f` takes and returns values in the op's math type (float for bfloat16/float16).
#include <cstdint>

#include "kernels/isa_namespace.h"
#include "strider/core/scalar_type.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

template <class TOut, class TIn, class F>
inline void unary_inner(char** p, const int64_t* s, int64_t n, const F& f) {
  using M = opmath_t<TIn>;
  auto* o = reinterpret_cast<TOut*>(p[0]);
  const auto* a = reinterpret_cast<const TIn*>(p[1]);
  if (s[0] == sizeof(TOut) && s[1] == sizeof(TIn)) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) store_as(o[i], f(static_cast<M>(a[i])));
  } else if (s[0] == sizeof(TOut) && s[1] == 0) {
    const auto v = f(static_cast<M>(a[0]));
    for (int64_t i = 0; i < n; ++i) store_as(o[i], v);
  } else {
    char* po = p[0];
    const char* pa = p[1];
    for (int64_t i = 0; i < n; ++i, po += s[0], pa += s[1])
      *reinterpret_cast<TOut*>(po) =
          static_cast<TOut>(f(static_cast<M>(*reinterpret_cast<const TIn*>(pa))));
  }
}

template <class TOut, class TIn, class F>
inline void binary_inner(char** p, const int64_t* s, int64_t n, const F& f) {
  using M = opmath_t<TIn>;
  auto* o = reinterpret_cast<TOut*>(p[0]);
  const auto* a = reinterpret_cast<const TIn*>(p[1]);
  const auto* b = reinterpret_cast<const TIn*>(p[2]);
  constexpr int64_t so = sizeof(TOut), si = sizeof(TIn);
  if (s[0] == so && s[1] == si && s[2] == si) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      store_as(o[i], f(static_cast<M>(a[i]), static_cast<M>(b[i])));
  } else if (s[0] == so && s[1] == si && s[2] == 0) {
    const M bv = static_cast<M>(b[0]);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) store_as(o[i], f(static_cast<M>(a[i]), bv));
  } else if (s[0] == so && s[1] == 0 && s[2] == si) {
    const M av = static_cast<M>(a[0]);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) store_as(o[i], f(av, static_cast<M>(b[i])));
  } else {
    char* po = p[0];
    const char *pa = p[1], *pb = p[2];
    for (int64_t i = 0; i < n; ++i, po += s[0], pa += s[1], pb += s[2])
      store_as(*reinterpret_cast<TOut*>(po), 
          f(static_cast<M>(*reinterpret_cast<const TIn*>(pa)),
            static_cast<M>(*reinterpret_cast<const TIn*>(pb))));
  }
}

// Three inputs of types A, B, C; `f` receives their math-type values.
template <class TOut, class A, class B, class C, class F>
inline void ternary_inner(char** p, const int64_t* s, int64_t n, const F& f) {
  auto* o = reinterpret_cast<TOut*>(p[0]);
  const auto* a = reinterpret_cast<const A*>(p[1]);
  const auto* b = reinterpret_cast<const B*>(p[2]);
  const auto* c = reinterpret_cast<const C*>(p[3]);
  if (s[0] == sizeof(TOut) && s[1] == sizeof(A) && s[2] == sizeof(B) && s[3] == sizeof(C)) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<TOut>(f(static_cast<opmath_t<A>>(a[i]), static_cast<opmath_t<B>>(b[i]),
                                 static_cast<opmath_t<C>>(c[i])));
  } else {
    char* po = p[0];
    const char *pa = p[1], *pb = p[2], *pc = p[3];
    for (int64_t i = 0; i < n; ++i, po += s[0], pa += s[1], pb += s[2], pc += s[3])
      store_as(*reinterpret_cast<TOut*>(po), 
          f(static_cast<opmath_t<A>>(*reinterpret_cast<const A*>(pa)),
            static_cast<opmath_t<B>>(*reinterpret_cast<const B*>(pb)),
            static_cast<opmath_t<C>>(*reinterpret_cast<const C*>(pc))));
  }
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
