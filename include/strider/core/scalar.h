#pragma once
// Scalar: a number passed to an op (`x + 1.5`, `fill_(0)`), kept as floating, integral or bool
// so type promotion can treat Python-style "wrapped numbers" the way PyTorch does.
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "strider/core/scalar_type.h"

namespace strider {

class Scalar {
 public:
  enum class Kind : int8_t { Floating, Integral, Boolean };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool b) : kind_(Kind::Boolean), i_(b) {}
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  Scalar(T v) : kind_(Kind::Integral), i_(static_cast<int64_t>(v)) {}
  Scalar(double v) : kind_(Kind::Floating), d_(v) {}
  Scalar(float v) : kind_(Kind::Floating), d_(v) {}
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Floating; }
  bool is_integral() const { return kind_ == Kind::Integral; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }

  double to_double() const { return kind_ == Kind::Floating ? d_ : static_cast<double>(i_); }
  int64_t to_long() const { return kind_ == Kind::Floating ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Floating ? d_ != 0.0 : i_ != 0; }

  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_long());
    else return static_cast<T>(static_cast<float>(to_double()));
  }

  // The dtype a tensor made from this scalar would get: float32, int64 or bool.
  ScalarType default_dtype() const {
    return kind_ == Kind::Floating ? kFloat : kind_ == Kind::Integral ? kLong : kBool;
  }

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};

template <>
inline double Scalar::to<double>() const { return to_double(); }

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace strider
