#include "kernels/adam.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/cpu_isa.h"
#include "kernels/parallel.h"

namespace strider::kernels {
namespace {

constexpr int64_t kGrain = 1 << 16;

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

// One body per instruction set, chosen at run time (kernels/cpu_isa.h): every element goes
// through the same IEEE operations in each, so all three give the same bits.
__attribute__((target("avx512f"))) void update_range_avx512(float* p, const float* g, float* m, float* v, int64_t n,
                                                            const AdamStep& s, bool decoupled, bool l2) {
  const __m512 scale = _mm512_set1_ps(s.param_scale), decay = _mm512_set1_ps(s.grad_decay);
  const __m512 b1 = _mm512_set1_ps(s.beta1), a1 = _mm512_set1_ps(s.one_minus_beta1);
  const __m512 b2 = _mm512_set1_ps(s.beta2), a2 = _mm512_set1_ps(s.one_minus_beta2);
  const __m512 bc2 = _mm512_set1_ps(s.bias_correction2_sqrt), eps = _mm512_set1_ps(s.eps);
  const __m512 step = _mm512_set1_ps(s.step);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 pv = _mm512_loadu_ps(p + i), gv = _mm512_loadu_ps(g + i);
    __m512 mv = _mm512_loadu_ps(m + i), vv = _mm512_loadu_ps(v + i);
    if (decoupled) pv = _mm512_mul_ps(pv, scale);
    if (l2) gv = _mm512_fmadd_ps(decay, pv, gv);
    mv = _mm512_fmadd_ps(a1, gv, _mm512_mul_ps(mv, b1));
    vv = _mm512_fmadd_ps(a2, _mm512_mul_ps(gv, gv), _mm512_mul_ps(vv, b2));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), bc2), eps);
    pv = _mm512_fmadd_ps(step, _mm512_div_ps(mv, denom), pv);
    _mm512_storeu_ps(p + i, pv);
    _mm512_storeu_ps(m + i, mv);
    _mm512_storeu_ps(v + i, vv);
  }
  for (; i < n; ++i) update_one(p[i], g[i], m[i], v[i], s, decoupled, l2);
}

__attribute__((target("avx2,fma"))) void update_range_avx2(float* p, const float* g, float* m, float* v, int64_t n,
                                                           const AdamStep& s, bool decoupled, bool l2) {
  const __m256 scale = _mm256_set1_ps(s.param_scale), decay = _mm256_set1_ps(s.grad_decay);
  const __m256 b1 = _mm256_set1_ps(s.beta1), a1 = _mm256_set1_ps(s.one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps(s.beta2), a2 = _mm256_set1_ps(s.one_minus_beta2);
  const __m256 bc2 = _mm256_set1_ps(s.bias_correction2_sqrt), eps = _mm256_set1_ps(s.eps);
  const __m256 step = _mm256_set1_ps(s.step);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 pv = _mm256_loadu_ps(p + i), gv = _mm256_loadu_ps(g + i);
    __m256 mv = _mm256_loadu_ps(m + i), vv = _mm256_loadu_ps(v + i);
    if (decoupled) pv = _mm256_mul_ps(pv, scale);
    if (l2) gv = _mm256_fmadd_ps(decay, pv, gv);
    mv = _mm256_fmadd_ps(a1, gv, _mm256_mul_ps(mv, b1));
    vv = _mm256_fmadd_ps(a2, _mm256_mul_ps(gv, gv), _mm256_mul_ps(vv, b2));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), bc2), eps);
    pv = _mm256_fmadd_ps(step, _mm256_div_ps(mv, denom), pv);
    _mm256_storeu_ps(p + i, pv);
    _mm256_storeu_ps(m + i, mv);
    _mm256_storeu_ps(v + i, vv);
  }
  for (; i < n; ++i) update_one(p[i], g[i], m[i], v[i], s, decoupled, l2);
}

void update_range_scalar(float* p, const float* g, float* m, float* v, int64_t n, const AdamStep& s, bool decoupled,
                         bool l2) {
  for (int64_t i = 0; i < n; ++i) update_one(p[i], g[i], m[i], v[i], s, decoupled, l2);
}

using UpdateRange = void (*)(float*, const float*, float*, float*, int64_t, const AdamStep&, bool, bool);

UpdateRange update_range_for_this_cpu() {
  if (cpu_has(Isa::avx512)) return update_range_avx512;
  if (cpu_has(Isa::avx2)) return update_range_avx2;
  return update_range_scalar;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* a0 = static_cast<const char*>(a.data());
  const char* b0 = static_cast<const char*>(b.data());
  const int64_t bytes = a.numel() * 4;
  return a0 < b0 + bytes && b0 < a0 + bytes;
}

}  // namespace

std::string adam_step_rejects(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  for (const Tensor* t : {&param, &grad, &exp_avg, &exp_avg_sq}) {
    if (!t->defined() || t->dtype() != kFloat) return "not all float32";
    if (!t->is_contiguous()) return "not all contiguous";
    if (t->sizes() != param.sizes()) return "shapes differ";
  }
  if (overlaps(param, grad) || overlaps(param, exp_avg) || overlaps(param, exp_avg_sq) || overlaps(grad, exp_avg) ||
      overlaps(grad, exp_avg_sq) || overlaps(exp_avg, exp_avg_sq))
    return "tensors overlap";
  return "";
}

void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const AdamStep& s) {
  float* p = static_cast<float*>(param.data());
  const float* g = static_cast<const float*>(grad.data());
  float* m = static_cast<float*>(exp_avg.data());
  float* v = static_cast<float*>(exp_avg_sq.data());
  const bool decoupled = s.param_scale != 1.0f, l2 = s.grad_decay != 0.0f;
  static const UpdateRange update_range = update_range_for_this_cpu();
  parallel_for(0, param.numel(), kGrain, [&](int64_t b, int64_t e) {
    update_range(p + b, g + b, m + b, v + b, e - b, s, decoupled, l2);
  });
}

}  // namespace strider::kernels
