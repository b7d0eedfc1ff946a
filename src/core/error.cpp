#include "strider/core/error.h"

namespace strider::detail {

void throw_error(const char* op, const std::string& message) {
  throw Error(str("[", op, "] ", message));
}

void internal_assert_failed(const char* condition, const char* file, int line,
                            const std::string& message) {
  throw Error(str("strider internal error: ", condition, " failed at ", file, ":", line,
                  message.empty() ? "" : ": ", message,
                  " (this is a bug in strider; please report it)"));
}

}  // namespace strider::detail
