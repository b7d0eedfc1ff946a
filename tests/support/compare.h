#pragma once
// Value comparison for tests: logical-order element by element, in float64.
#include <cmath>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider::testing {

inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double rtol,
                                            double atol) {
  if (got.sizes() != want.sizes()) {
    std::ostringstream os;
    os << "shape " << got.sizes() << " != " << want.sizes();
    return ::testing::AssertionFailure() << os.str();
  }
  Tensor g = got.to(kDouble, MemoryFormat::Contiguous, true);
  Tensor w = want.to(kDouble, MemoryFormat::Contiguous, true);
  const double* gp = g.data_ptr<double>();
  const double* wp = w.data_ptr<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = gp[i], b = wp[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b)))
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << b
                                           << " (shape " << got.sizes() << ")";
  }
  return ::testing::AssertionSuccess();
}

inline std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(kDouble, MemoryFormat::Contiguous, true);
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

}  // namespace strider::testing
