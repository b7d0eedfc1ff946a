#pragma once
// The arithmetic behind nn::init's truncated normal and orthogonal fills, shared by the eager
// fills (nn/init.cpp) and deferred materialization (nn/deferred_init.cpp), which draw their
// uniform and normal numbers from different generators.
#include <cstdint>
#include <vector>

namespace strider::nn::init::detail {

// The inverse error function, to double precision (an initial approximation refined by Newton
// steps on std::erf); +-1 give +-infinity.
double erfinv(double y);

// torch.nn.init.trunc_normal_'s transform of one uniform draw u in [0, 1): the inverse CDF of
// N(mean, std^2) over [Phi(a), Phi(b)], clamped to [a, b].
struct TruncNormal {
  double mean, std, a, b;
  double from_uniform(double u) const;
};

// torch.nn.init.orthogonal_'s matrix from `normal` (rows x cols, row-major, standard normal
// draws): the Q of its QR decomposition (of its transpose when rows < cols) with each column
// multiplied by the sign of R's diagonal, so the result is unique; then scaled by `gain`.
// Householder reflections in double precision.
std::vector<double> orthogonal_from_normal(std::vector<double> normal, int64_t rows, int64_t cols, double gain);

}  // namespace strider::nn::init::detail
