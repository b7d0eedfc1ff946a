#include "strider/core/error.h"

namespace strider {

std::string message_without_op(const std::exception& e) {
  const std::string m = e.what();
  const size_t end = m.find("] ");  // "[op] message"
  return !m.empty() && m[0] == '[' && end != std::string::npos ? m.substr(end + 2) : m;
}

}  // namespace strider

namespace strider::detail {

void throw_error(const char* op, const std::string& message) {
  throw Error(str("[", op, "] ", message));
}

void throw_undefined_tensor() {
  throw Error("[Tensor] this tensor is undefined (a default-constructed Tensor(), a gradient that was never "
              "computed, or the output of a module call (*m)(x) that returned something other than one Tensor: "
              "take that as an nn::Value); check defined() before using it");
}

void internal_assert_failed(const char* condition, const char* file, int line,
                            const std::string& message) {
  throw Error(str("strider internal error: ", condition, " failed at ", file, ":", line,
                  message.empty() ? "" : ": ", message,
                  " (this is a bug in strider; please report it)"));
}

}  // namespace strider::detail
