#pragma once
// The median wall time of `reps` calls of f, after one warm-up call (primitive creation, page
// faults), for benchmarks that time one operation alone.
#include <algorithm>
#include <chrono>
#include <vector>

namespace strider::bench {

template <class F>
double median_seconds(F&& f, int reps) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace strider::bench
