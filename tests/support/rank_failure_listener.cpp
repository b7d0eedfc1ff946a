#include "support/rank_failure_listener.h"

#include <cstdio>

namespace strider::testing {

void RankFailureListener::OnTestStart(const ::testing::TestInfo& info) {
  test_ = std::string(info.test_suite_name()) + "." + info.name();
}

void RankFailureListener::OnTestPartResult(const ::testing::TestPartResult& result) {
  if (!result.failed() || pg_->size() <= 1) return;  // at world size 1 nobody can wait for us
  std::string text = result.file_name() ? result.file_name() : "(unknown file)";
  text.append(":").append(std::to_string(result.line_number())).append(": ").append(result.summary());
  if (pg_->rank() != 0) std::fprintf(stderr, "[rank %d of %d] %s\n", pg_->rank(), pg_->size(), text.c_str());
  // A fatal failure returns from the test early: end the job now, before the test's destructors
  // run (one may wait for a collective the peers never join). A non-fatal one goes on in step
  // with the peers, and main's all-reduce of the results fails the job at the end.
  if (!result.fatally_failed()) return;
  std::fflush(stdout);
  pg_->abort("test " + test_ + " failed on this rank; the job ends so its peers do not wait for it:\n" + text);
}

}  // namespace strider::testing
