#include "flag_checks.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <type_traits>

namespace strider::tools {
namespace {

std::string shortest(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The reason `text` is not a whole number of type T, or "" with the value in `v`.
template <class T>
std::string parse_whole(const std::string& text, T& v) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (error == std::errc::result_out_of_range)
    return "'" + text + "' does not fit " + (std::is_signed_v<T> ? "a signed" : "an unsigned") + " " +
           std::to_string(8 * sizeof(T)) + "-bit integer";
  if (error != std::errc() || end != text.data() + text.size())
    return "'" + text + "' is not a whole number" + (std::is_signed_v<T> ? "" : " (0 or more)");
  return "";
}

}  // namespace

const CLI::Validator& non_empty() {
  static const CLI::Validator check(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty value (an unset shell variable?); give it a value or leave the flag out" : "";
      },
      "", "NON_EMPTY");
  return check;
}

const CLI::Validator& non_empty_argument() {
  static const CLI::Validator check(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty value (an unset shell variable?); give the path" : "";
      },
      "", "NON_EMPTY");
  return check;
}

CLI::Validator decimal_range(double lo, double hi) {
  const std::string range = shortest(lo) + " to " + shortest(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double v = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (error == std::errc::result_out_of_range) return "Value " + text + " not in range " + range;  // 1e999
        if (error != std::errc() || end != text.data() + text.size()) return "'" + text + "' is not a number";
        if (!std::isfinite(v)) return "'" + text + "' is not a finite number in the range " + range;
        if (!(v >= lo && v <= hi)) return "Value " + text + " not in range " + range;
        return "";
      },
      "[" + shortest(lo) + " - " + shortest(hi) + "]");
}

template <class T>
CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        T v{};
        return parse_whole(text, v);
      },
      "", "WHOLE_NUMBER");
}

template <class T>
CLI::Validator whole_range(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        T v{};
        if (std::string why = parse_whole(text, v); !why.empty()) return why;
        if (v < lo || v > hi) return "Value " + text + " not in range " + std::to_string(lo) + " to " + std::to_string(hi);
        return "";
      },
      "[" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

template CLI::Validator whole_number<int>();
template CLI::Validator whole_number<int64_t>();
template CLI::Validator whole_number<uint64_t>();
template CLI::Validator whole_range<int>(int, int);
template CLI::Validator whole_range<int64_t>(int64_t, int64_t);

}  // namespace strider::tools
