#include "kernels/adam.h"

// GCC 12's AVX-512 intrinsics pass a self-initialized "undefined" vector (`__m512 __Y = __Y;`) as
// the unused merge source, which its uninitialized-use warnings report once inlined into a
// target("avx512f") function; no lane of it is ever read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <type_traits>

#include "kernels/cpu_isa.h"
#include "kernels/parallel.h"

namespace strider::kernels {
namespace {

constexpr int64_t kGrain = 1 << 16;

// A 32-bit integer hash with full avalanche (Chris Wellons' "lowbias32").
inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The stream for elements sharing the high 32 bits of their index; the low 32 bits are mixed in
// per element (the vector bodies below do the same in lanes).
inline uint32_t high_key(uint32_t key, int64_t element) {
  return mix32(key + 0x9e3779b9u * (static_cast<uint32_t>(static_cast<uint64_t>(element) >> 32) + 1u));
}

inline bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

// The update of one element, in the order and rounding of the optimizer's ops:
// mul_(p, scale); [g = add(g, p, decay)]; mul_(m, b1); add_(m, g, 1 - b1); mul_(v, b2);
// add_(v, mul(g, g), 1 - b2); denom = add(div(sqrt(v), bc2_sqrt), eps); add_(p, div(m, denom), step).
inline void update_one(float& p, float g, float& m, float& v, const AdamStep& s, bool decoupled, bool l2) {
  if (decoupled) p = p * s.param_scale;
  if (l2) g = std::fma(s.grad_decay, p, g);
  m = std::fma(s.one_minus_beta1, g, m * s.beta1);
  const float gg = g * g;
  v = std::fma(s.one_minus_beta2, gg, v * s.beta2);
  const float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
  p = std::fma(s.step, m / denom, p);
}

inline float widen(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// Elements [0, n) of moments stored as float (M = float) or bfloat16 bits (M = uint16_t);
// `first` is the whole parameter's index of element 0.
template <class M>
void update_tail(float* p, const float* g, M* m, M* v, int64_t n, int64_t first, const AdamStep& s, bool decoupled,
                 bool l2) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<M, float>) {
      update_one(p[i], g[i], m[i], v[i], s, decoupled, l2);
    } else {
      float mf = widen(m[i]), vf = widen(v[i]);
      update_one(p[i], g[i], mf, vf, s, decoupled, l2);
      m[i] = round_to_bfloat16_stochastically(mf, stochastic_rounding_bits(s.round_key_exp_avg, first + i));
      v[i] = round_to_bfloat16_stochastically(vf, stochastic_rounding_bits(s.round_key_exp_avg_sq, first + i));
    }
  }
}

// Lanes i..i+L-1 share their index's high 32 bits unless the block crosses a multiple of 2^32.
inline bool same_high_word(int64_t element, int lanes) {
  return (static_cast<uint64_t>(element) >> 32) == (static_cast<uint64_t>(element + lanes - 1) >> 32);
}

__attribute__((target("avx512f"))) inline __m512i mix32_avx512(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x7feb352d));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(0x846ca68bu)));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

// round_to_bfloat16_stochastically in 16 lanes.
__attribute__((target("avx512f"))) inline __m256i round_avx512(__m512 x, uint32_t key, int64_t element) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(element))), lanes);
  const __m512i bits = mix32_avx512(_mm512_xor_si512(index, _mm512_set1_epi32(static_cast<int>(high_key(key, element)))));
  const __m512i u = _mm512_castps_si512(x);
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_and_si512(bits, _mm512_set1_epi32(0xffff))), 16);
  const __m512i magnitude = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __mmask16 finite = _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __mmask16 overflow = _mm512_mask_cmpeq_epi32_mask(
      finite, _mm512_and_si512(r, _mm512_set1_epi32(0x7fff)), _mm512_set1_epi32(0x7f80));
  r = _mm512_mask_sub_epi32(r, overflow, r, _mm512_set1_epi32(1));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7fc0));
  return _mm512_cvtepi32_epi16(r);
}

__attribute__((target("avx512f"))) inline __m512 load_avx512(const float* m) { return _mm512_loadu_ps(m); }
__attribute__((target("avx512f"))) inline __m512 load_avx512(const uint16_t* m) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(m)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// One body per instruction set, chosen at run time (kernels/cpu_isa.h): every element goes
// through the same IEEE and integer operations in each, so all three give the same bits.
template <class M>
__attribute__((target("avx512f"))) void update_range_avx512(float* p, const float* g, M* m, M* v, int64_t n,
                                                            int64_t first, const AdamStep& s, bool decoupled,
                                                            bool l2) {
  const __m512 scale = _mm512_set1_ps(s.param_scale), decay = _mm512_set1_ps(s.grad_decay);
  const __m512 b1 = _mm512_set1_ps(s.beta1), a1 = _mm512_set1_ps(s.one_minus_beta1);
  const __m512 b2 = _mm512_set1_ps(s.beta2), a2 = _mm512_set1_ps(s.one_minus_beta2);
  const __m512 bc2 = _mm512_set1_ps(s.bias_correction2_sqrt), eps = _mm512_set1_ps(s.eps);
  const __m512 step = _mm512_set1_ps(s.step);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (!std::is_same_v<M, float> && !same_high_word(first + i, 16)) {
      update_tail(p + i, g + i, m + i, v + i, 16, first + i, s, decoupled, l2);
      continue;
    }
    __m512 pv = _mm512_loadu_ps(p + i), gv = _mm512_loadu_ps(g + i);
    __m512 mv = load_avx512(m + i), vv = load_avx512(v + i);
    if (decoupled) pv = _mm512_mul_ps(pv, scale);
    if (l2) gv = _mm512_fmadd_ps(decay, pv, gv);
    mv = _mm512_fmadd_ps(a1, gv, _mm512_mul_ps(mv, b1));
    vv = _mm512_fmadd_ps(a2, _mm512_mul_ps(gv, gv), _mm512_mul_ps(vv, b2));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), bc2), eps);
    pv = _mm512_fmadd_ps(step, _mm512_div_ps(mv, denom), pv);
    _mm512_storeu_ps(p + i, pv);
    if constexpr (std::is_same_v<M, float>) {
      _mm512_storeu_ps(m + i, mv);
      _mm512_storeu_ps(v + i, vv);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(m + i), round_avx512(mv, s.round_key_exp_avg, first + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + i), round_avx512(vv, s.round_key_exp_avg_sq, first + i));
    }
  }
  update_tail(p + i, g + i, m + i, v + i, n - i, first + i, s, decoupled, l2);
}

__attribute__((target("avx2"))) inline __m256i mix32_avx2(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7feb352d));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x846ca68bu)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

// round_to_bfloat16_stochastically in 8 lanes.
__attribute__((target("avx2"))) inline __m128i round_avx2(__m256 x, uint32_t key, int64_t element) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(element))), lanes);
  const __m256i bits = mix32_avx2(_mm256_xor_si256(index, _mm256_set1_epi32(static_cast<int>(high_key(key, element)))));
  const __m256i u = _mm256_castps_si256(x);
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_and_si256(bits, _mm256_set1_epi32(0xffff))), 16);
  // NaN: |u| > 0x7f800000, compared as signed (both sides are below 2^31); finite: below it.
  const __m256i magnitude = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i finite = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800000), magnitude);
  const __m256i overflow = _mm256_and_si256(
      finite, _mm256_cmpeq_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x7fff)), _mm256_set1_epi32(0x7f80)));
  r = _mm256_sub_epi32(r, _mm256_and_si256(overflow, _mm256_set1_epi32(1)));
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), nan);
  // Every lane is below 2^16: packing with unsigned saturation keeps it; then lanes 0-3 and 4-7 together.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  return _mm256_castsi256_si128(packed);
}

__attribute__((target("avx2"))) inline __m256 load_avx2(const float* m) { return _mm256_loadu_ps(m); }
__attribute__((target("avx2"))) inline __m256 load_avx2(const uint16_t* m) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

template <class M>
__attribute__((target("avx2,fma"))) void update_range_avx2(float* p, const float* g, M* m, M* v, int64_t n,
                                                           int64_t first, const AdamStep& s, bool decoupled, bool l2) {
  const __m256 scale = _mm256_set1_ps(s.param_scale), decay = _mm256_set1_ps(s.grad_decay);
  const __m256 b1 = _mm256_set1_ps(s.beta1), a1 = _mm256_set1_ps(s.one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps(s.beta2), a2 = _mm256_set1_ps(s.one_minus_beta2);
  const __m256 bc2 = _mm256_set1_ps(s.bias_correction2_sqrt), eps = _mm256_set1_ps(s.eps);
  const __m256 step = _mm256_set1_ps(s.step);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (!std::is_same_v<M, float> && !same_high_word(first + i, 8)) {
      update_tail(p + i, g + i, m + i, v + i, 8, first + i, s, decoupled, l2);
      continue;
    }
    __m256 pv = _mm256_loadu_ps(p + i), gv = _mm256_loadu_ps(g + i);
    __m256 mv = load_avx2(m + i), vv = load_avx2(v + i);
    if (decoupled) pv = _mm256_mul_ps(pv, scale);
    if (l2) gv = _mm256_fmadd_ps(decay, pv, gv);
    mv = _mm256_fmadd_ps(a1, gv, _mm256_mul_ps(mv, b1));
    vv = _mm256_fmadd_ps(a2, _mm256_mul_ps(gv, gv), _mm256_mul_ps(vv, b2));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), bc2), eps);
    pv = _mm256_fmadd_ps(step, _mm256_div_ps(mv, denom), pv);
    _mm256_storeu_ps(p + i, pv);
    if constexpr (std::is_same_v<M, float>) {
      _mm256_storeu_ps(m + i, mv);
      _mm256_storeu_ps(v + i, vv);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(m + i), round_avx2(mv, s.round_key_exp_avg, first + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(v + i), round_avx2(vv, s.round_key_exp_avg_sq, first + i));
    }
  }
  update_tail(p + i, g + i, m + i, v + i, n - i, first + i, s, decoupled, l2);
}

template <class M>
void update_range_scalar(float* p, const float* g, M* m, M* v, int64_t n, int64_t first, const AdamStep& s,
                         bool decoupled, bool l2) {
  update_tail(p, g, m, v, n, first, s, decoupled, l2);
}

template <class M>
using UpdateRange = void (*)(float*, const float*, M*, M*, int64_t, int64_t, const AdamStep&, bool, bool);

template <class M>
UpdateRange<M> update_range_for_this_cpu() {
  if (cpu_has(Isa::avx512)) return update_range_avx512<M>;
  if (cpu_has(Isa::avx2)) return update_range_avx2<M>;
  return update_range_scalar<M>;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* a0 = static_cast<const char*>(a.data());
  const char* b0 = static_cast<const char*>(b.data());
  const int64_t a_bytes = a.numel() * static_cast<int64_t>(a.element_size());
  const int64_t b_bytes = b.numel() * static_cast<int64_t>(b.element_size());
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

template <class M>
void run(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, const AdamStep& s) {
  float* p = static_cast<float*>(param.data());
  const float* g = static_cast<const float*>(grad.data());
  M* m = static_cast<M*>(exp_avg.data());
  M* v = static_cast<M*>(exp_avg_sq.data());
  const bool decoupled = s.param_scale != 1.0f, l2 = s.grad_decay != 0.0f;
  static const UpdateRange<M> update_range = update_range_for_this_cpu<M>();
  parallel_for(0, param.numel(), kGrain, [&](int64_t b, int64_t e) {
    update_range(p + b, g + b, m + b, v + b, e - b, s.first_element + b, s, decoupled, l2);
  });
}

}  // namespace

uint32_t stochastic_rounding_bits(uint32_t key, int64_t element) {
  return mix32(static_cast<uint32_t>(element) ^ high_key(key, element));
}

uint16_t round_to_bfloat16_stochastically(float x, uint32_t bits) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (is_nan_bits(u)) return 0x7fc0u;
  uint32_t r = (u + (bits & 0xffffu)) >> 16;
  // A finite value stays finite: past bfloat16's largest magnitude it rounds down to it.
  if ((u & 0x7fffffffu) < 0x7f800000u && (r & 0x7fffu) == 0x7f80u) r -= 1;
  return static_cast<uint16_t>(r);
}

std::string adam_step_rejects(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  for (const Tensor* t : {&param, &grad, &exp_avg, &exp_avg_sq}) {
    if (!t->defined()) return "a tensor is undefined";
    if (!t->is_contiguous()) return "not all contiguous";
    if (t->sizes() != param.sizes()) return "shapes differ";
  }
  if (param.dtype() != kFloat || grad.dtype() != kFloat) return "parameter or gradient not float32";
  if (exp_avg.dtype() != exp_avg_sq.dtype() || (exp_avg.dtype() != kFloat && exp_avg.dtype() != kBFloat16))
    return "moments not both float32 or both bfloat16";
  if (overlaps(param, grad) || overlaps(param, exp_avg) || overlaps(param, exp_avg_sq) || overlaps(grad, exp_avg) ||
      overlaps(grad, exp_avg_sq) || overlaps(exp_avg, exp_avg_sq))
    return "tensors overlap";
  return "";
}

void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const AdamStep& s) {
  if (exp_avg.dtype() == kBFloat16) run<uint16_t>(param, grad, exp_avg, exp_avg_sq, s);
  else run<float>(param, grad, exp_avg, exp_avg_sq, s);
}

}  // namespace strider::kernels
