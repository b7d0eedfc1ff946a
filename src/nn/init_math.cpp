#include "init_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace strider::nn::init::detail {

double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y < 0) return -erfinv(-y);  // odd
  // Giles' approximation ("Approximating the erfinv function", GPU Computing Gems, 2011),
  // about 1e-7 relative, then Newton on erf(x) = y, which doubles the correct digits each step.
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    const double t = w - 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * t;
    x = p * y;
  } else {
    const double t = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * t;
    x = p * y;
  }
  const double slope = 2.0 / std::sqrt(std::numbers::pi);
  for (int i = 0; i < 3; ++i) {
    const double d = slope * std::exp(-x * x);
    if (d == 0) break;
    // Near 1, erf(x) - y cancels; (1 - y) - erfc(x) does not (1 - y is exact there).
    const double residual = y < 0.5 ? std::erf(x) - y : (1.0 - y) - std::erfc(x);
    x -= residual / d;
  }
  return x;
}

namespace {
double normal_cdf(double x) { return (1.0 + std::erf(x / std::numbers::sqrt2)) / 2.0; }
}  // namespace

double TruncNormal::from_uniform(double u) const {
  if (std == 0) return std::clamp(mean, a, b);
  // PyTorch: uniform_(2l - 1, 2u - 1), erfinv_, mul_(std * sqrt(2)), add_(mean), clamp_(a, b).
  const double lo = 2 * normal_cdf((a - mean) / std) - 1, hi = 2 * normal_cdf((b - mean) / std) - 1;
  const double x = erfinv(lo + (hi - lo) * u) * std * std::numbers::sqrt2 + mean;
  return std::clamp(x, a, b);
}

std::vector<double> orthogonal_from_normal(std::vector<double> normal, int64_t rows, int64_t cols, double gain) {
  // A tall m x n matrix (m >= n) stored by columns, so each reflection works on contiguous columns.
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  std::vector<double> a(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = wide ? c : r, j = wide ? r : c;  // (i, j) of the tall matrix
      a[static_cast<size_t>(j * m + i)] = normal[static_cast<size_t>(r * cols + c)];
    }
  normal.clear();
  normal.shrink_to_fit();
  // Householder: reflection k (unit vector v_k, stored in column k from row k down) zeroes
  // column k under the diagonal; R's diagonal goes to diag.
  std::vector<double> diag(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double* col = &a[static_cast<size_t>(k * m)];
    double norm2 = 0;
    for (int64_t i = k; i < m; ++i) norm2 += col[i] * col[i];
    const double norm = std::sqrt(norm2);
    const double alpha = col[k] >= 0 ? -norm : norm;  // R's diagonal entry; the sign avoids cancellation
    diag[static_cast<size_t>(k)] = alpha;
    col[k] -= alpha;  // v = x - alpha e_k, normalized below
    double vnorm2 = 0;
    for (int64_t i = k; i < m; ++i) vnorm2 += col[i] * col[i];
    const double inv = vnorm2 > 0 ? 1.0 / std::sqrt(vnorm2) : 0.0;
    for (int64_t i = k; i < m; ++i) col[i] *= inv;
    for (int64_t j = k + 1; j < n; ++j) {  // A_j -= 2 v (v . A_j)
      double* cj = &a[static_cast<size_t>(j * m)];
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += col[i] * cj[i];
      for (int64_t i = k; i < m; ++i) cj[i] -= 2 * dot * col[i];
    }
  }
  // Q's first n columns: the reflections applied to e_1..e_n, last reflection first.
  std::vector<double> q(static_cast<size_t>(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    double* qj = &q[static_cast<size_t>(j * m)];
    qj[j] = 1.0;
    for (int64_t k = std::min(j, n - 1); k >= 0; --k) {
      const double* v = &a[static_cast<size_t>(k * m)];
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i] * qj[i];
      for (int64_t i = k; i < m; ++i) qj[i] -= 2 * dot * v[i];
    }
  }
  // Unique Q: columns times sign(R's diagonal), as PyTorch's q *= d.sign().
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = wide ? c : r, j = wide ? r : c;
      const double d = diag[static_cast<size_t>(j)];
      const double sign = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;
      out[static_cast<size_t>(r * cols + c)] = gain * sign * q[static_cast<size_t>(j * m + i)];
    }
  return out;
}

}  // namespace strider::nn::init::detail
