#pragma once
// A distributed test that fails on one rank must end the job, not hang it: an ASSERT returns
// early on the failing rank while its peers wait in the test's next collective (or a destructor
// joins a thread that waits for one). This listener prints each failure with the rank's number
// (rank 0 has GoogleTest's printer; the others print nothing else) and, at the end of a test that failed on this rank, ends
// the whole job through ProcessGroup::abort, which names the rank and the test.
#include <gtest/gtest.h>
#include <strider/dist/process_group.h>

#include <memory>
#include <string>

namespace strider::testing {

class RankFailureListener : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailureListener(std::shared_ptr<dist::ProcessGroup> pg) : pg_(std::move(pg)) {}

  void OnTestStart(const ::testing::TestInfo&) override { failures_.clear(); }
  void OnTestPartResult(const ::testing::TestPartResult& result) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  std::shared_ptr<dist::ProcessGroup> pg_;
  std::string failures_;
};

}  // namespace strider::testing
