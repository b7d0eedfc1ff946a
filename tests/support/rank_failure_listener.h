#pragma once
// A distributed test that fails fatally on one rank must end the job, not hang it: an ASSERT
// returns early on the failing rank while its peers wait in the test's next collective (or a
// destructor waits for one). This listener prints each failure with the rank's number (rank 0
// has GoogleTest's printer; the others print nothing else) and, at a fatal failure, ends the whole
// job through ProcessGroup::abort, naming the rank and the test, before the test unwinds.
#include <gtest/gtest.h>
#include <strider/dist/process_group.h>

#include <memory>
#include <string>

namespace strider::testing {

class RankFailureListener : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailureListener(std::shared_ptr<dist::ProcessGroup> pg) : pg_(std::move(pg)) {}

  // Remembers the test's name (GoogleTest holds its lock while reporting a result, so asking it
  // for the current test then would deadlock).
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestPartResult(const ::testing::TestPartResult& result) override;

 private:
  std::shared_ptr<dist::ProcessGroup> pg_;
  std::string test_ = "(outside a test)";
};

}  // namespace strider::testing
