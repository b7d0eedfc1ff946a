#pragma once
// parallel_for: splits [begin, end) into one contiguous chunk per OpenMP thread, or runs inline
// when the range is smaller than `grain` or we are already inside a parallel region.
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace strider::kernels {

template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const Fn& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (n < grain || omp_in_parallel() || omp_get_max_threads() == 1) {
    fn(begin, end);
    return;
  }
  const int64_t max_threads = std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain);
#pragma omp parallel num_threads(static_cast<int>(max_threads))
  {
    const int64_t nt = omp_get_num_threads();
    const int64_t t = omp_get_thread_num();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = begin + std::min(n, t * chunk);
    const int64_t e = begin + std::min(n, (t + 1) * chunk);
    if (b < e) fn(b, e);
  }
}

}  // namespace strider::kernels
