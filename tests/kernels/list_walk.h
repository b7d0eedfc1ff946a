#pragma once
// Walks an implementation list: the reference (the last entry) computes the expected outputs,
// then every other implementation that accepts a fresh copy of the problem must match them.
#include <functional>
#include <string>
#include <vector>

#include "kernels/implementation_list.h"
#include "support/compare.h"

namespace strider::testing {

template <class Problem>
struct ListWalk {
  std::function<Problem()> fresh;                              // a problem with new output tensors
  std::function<std::vector<Tensor>(const Problem&)> outputs;  // what to compare
  double tol = 1e-4;
};

// Returns how many implementations accepted the problem (the reference included), so a test can
// insist that a fast path was actually compared.
template <class Problem>
int walk_list(const kernels::ImplementationList<Problem>& list, const ListWalk<Problem>& w) {
  const Problem want = w.fresh();
  list.back().run(want);
  const std::vector<Tensor> expected = w.outputs(want);
  int accepted = 1;
  for (size_t i = 0; i + 1 < list.size(); ++i) {
    const Problem got = w.fresh();
    if (!list[i].rejects(got).empty()) continue;
    ++accepted;
    list[i].run(got);
    const std::vector<Tensor> actual = w.outputs(got);
    for (size_t k = 0; k < expected.size(); ++k)
      EXPECT_TRUE(all_close(actual[k], expected[k], w.tol, w.tol)) << list[i].name << ", output " << k;
  }
  return accepted;
}

}  // namespace strider::testing
