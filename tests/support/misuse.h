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

}  // namespace strider::testing
