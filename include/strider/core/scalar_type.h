#pragma once
// Element types. Names follow PyTorch ("float32", "bfloat16", ...).
#include <cstdint>
#include <ostream>
#include <string_view>

#include "strider/core/reduced_float.h"

namespace strider {

enum class ScalarType : int8_t { Float, Double, BFloat16, Half, Long, Int, Byte, Bool };

inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kDouble = ScalarType::Double;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kHalf = ScalarType::Half;
inline constexpr ScalarType kLong = ScalarType::Long;
inline constexpr ScalarType kInt = ScalarType::Int;
inline constexpr ScalarType kByte = ScalarType::Byte;
inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr int kNumScalarTypes = 8;

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return 4;
    case ScalarType::Double: return 8;
    case ScalarType::BFloat16: return 2;
    case ScalarType::Half: return 2;
    case ScalarType::Long: return 8;
    case ScalarType::Int: return 4;
    case ScalarType::Byte: return 1;
    case ScalarType::Bool: return 1;
  }
  return 0;
}

constexpr bool is_floating_point(ScalarType t) {
  return t == kFloat || t == kDouble || t == kBFloat16 || t == kHalf;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == kLong || t == kInt || t == kByte || (include_bool && t == kBool);
}

// "float32", "float64", "bfloat16", "float16", "int64", "int32", "uint8", "bool".
std::string_view to_string(ScalarType t);
// Inverse of to_string; also accepts "float", "double", "half", "long", "int". Throws on others.
ScalarType scalar_type_from_string(std::string_view name);
std::ostream& operator<<(std::ostream& os, ScalarType t);

// PyTorch's promote_types: the smallest type both a and b convert to without losing category.
ScalarType promote_types(ScalarType a, ScalarType b);

template <class T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = kFloat; };
template <> struct CppTypeToScalarType<double> { static constexpr ScalarType value = kDouble; };
template <> struct CppTypeToScalarType<BFloat16> { static constexpr ScalarType value = kBFloat16; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = kHalf; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = kLong; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = kInt; };
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = kByte; };
template <> struct CppTypeToScalarType<bool> { static constexpr ScalarType value = kBool; };
template <class T> inline constexpr ScalarType scalar_type_of = CppTypeToScalarType<T>::value;

// The type arithmetic on T happens in: float for the 16-bit floats, T otherwise.
template <class T> struct OpMathType { using type = T; };
template <> struct OpMathType<BFloat16> { using type = float; };
template <> struct OpMathType<Half> { using type = float; };
template <class T> using opmath_t = typename OpMathType<T>::type;

}  // namespace strider
