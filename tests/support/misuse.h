#pragma once
// Tables of calls that must fail with a strider::Error whose message holds a given piece.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <strider/core/error.h>

namespace strider::testing {

struct Misuse {
  const char* what;
  std::function<void()> call;
  const char* expect;  // a piece of the message
};

inline void expect_errors(const std::vector<Misuse>& cases) {
  for (const Misuse& c : cases) {
    std::string msg;
    try {
      c.call();
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": got '" << msg << "'";
  }
}

// The message of the Error `f` throws ("" if none).
inline std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace strider::testing
