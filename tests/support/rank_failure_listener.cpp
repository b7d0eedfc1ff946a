#include "support/rank_failure_listener.h"

#include <cstdio>

namespace strider::testing {

void RankFailureListener::OnTestPartResult(const ::testing::TestPartResult& result) {
  if (!result.failed()) return;
  std::string where = result.file_name() ? result.file_name() : "(unknown file)";
  where += ":" + std::to_string(result.line_number());
  const std::string text = where + ": " + result.summary();
  failures_ += (failures_.empty() ? "" : "\n") + text;
  if (pg_->size() > 1 && pg_->rank() != 0) std::fprintf(stderr, "[rank %d of %d] %s\n", pg_->rank(), pg_->size(), text.c_str());
}

void RankFailureListener::OnTestEnd(const ::testing::TestInfo& info) {
  // At world size 1 there is nobody to hang: GoogleTest reports the failure and goes on.
  if (pg_->size() <= 1 || !info.result()->Failed()) return;
  std::fflush(stdout);
  pg_->abort(std::string("test ") + info.test_suite_name() + "." + info.name() +
             " failed on this rank; the job ends so its peers do not wait for it:\n" + failures_);
}

}  // namespace strider::testing
