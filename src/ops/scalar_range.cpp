// Whether a Scalar converts to a dtype without overflow, by c10::checked_convert's rule (what
// PyTorch's fill_, full and masked_fill apply).
#include <cmath>
#include <cstdint>
#include <limits>

#include "strider/ops/convert.h"

namespace strider::ops {
namespace {

struct Range {
  double lowest, max;
};

Range range_of(ScalarType t) {
  switch (t) {
    case kFloat: return {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
    case kBFloat16: return {-3.3895313892515355e38, 3.3895313892515355e38};
    case kHalf: return {-65504.0, 65504.0};
    case kInt: return {-2147483648.0, 2147483647.0};
    case kByte: return {0.0, 255.0};
    default: return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
}

bool overflows(const Scalar& v, ScalarType t) {
  if (v.is_boolean() || t == kBool || t == kDouble) return false;
  const Range r = range_of(t);
  if (v.is_floating_point()) {
    const double d = v.to_double();
    if (std::isinf(d) || std::isnan(d)) return !is_floating_point(t);  // floats hold them, integers do not
    if (t == kLong) return !(d >= -9223372036854775808.0 && d < 9223372036854775808.0);
    return d < r.lowest || d > r.max;
  }
  const int64_t i = v.to_long();
  // An integer may wrap into an unsigned type by two's complement (uint8 -1 is 255), as in c10.
  if (t == kByte) return i > 255 || i < -255;
  if (t == kLong || t == kFloat || t == kBFloat16) return false;
  return static_cast<double>(i) < r.lowest || static_cast<double>(i) > r.max;
}

}  // namespace

void check_scalar_fits(const Scalar& value, ScalarType dtype, const char* op) {
  STRIDER_CHECK(!overflows(value, dtype), op, "value ", value, " cannot be converted to ", dtype,
                " without overflow; give a value in ", dtype, "'s range, or use a wider dtype");
}

}  // namespace strider::ops
