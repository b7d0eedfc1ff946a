#include "strider/core/error.h"

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
