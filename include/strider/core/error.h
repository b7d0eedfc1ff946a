#pragma once
// strider::Error and the check macros.
//
// STRIDER_CHECK is for anything a user can cause: the message names the op, the values
// involved and the fix, and is only built when the check fails. STRIDER_INTERNAL_ASSERT
// is for our own invariants: when it fires, strider has a bug.
#include <sstream>
#include <stdexcept>
#include <string>

namespace strider {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The message of `e` without its leading "[op] ", for an error reported again inside another
// op's message (which has its own tag and names the file itself).
std::string message_without_op(const std::exception& e);

namespace detail {

template <class... Args>
std::string str(const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::string();
  } else {
    std::ostringstream os;
    (os << ... << args);
    return os.str();
  }
}

[[noreturn]] void throw_error(const char* op, const std::string& message);
[[noreturn]] void throw_undefined_tensor();
[[noreturn]] void internal_assert_failed(const char* condition, const char* file, int line,
                                         const std::string& message);

}  // namespace detail
}  // namespace strider

// Throws strider::Error("[op] message...") when cond is false.
#define STRIDER_CHECK(cond, op, ...)                                              \
  do {                                                                            \
    if (!(cond)) [[unlikely]] {                                                   \
      ::strider::detail::throw_error(op, ::strider::detail::str(__VA_ARGS__));    \
    }                                                                             \
  } while (0)

#define STRIDER_INTERNAL_ASSERT(cond, ...)                                              \
  do {                                                                                  \
    if (!(cond)) [[unlikely]] {                                                         \
      ::strider::detail::internal_assert_failed(#cond, __FILE__, __LINE__,              \
                                                ::strider::detail::str(__VA_ARGS__));   \
    }                                                                                   \
  } while (0)
