#pragma once
// Shared by the data tests: small datasets, batch comparison and a guard that fails a test
// (instead of hanging CTest) when a loader deadlocks.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider::testing {

inline std::vector<int64_t> longs(const Tensor& t) {
  Tensor c = t.to(kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

inline bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data(), cb.data(), ca.nbytes()) == 0;
}

inline bool same_batch(const data::Batch& a, const data::Batch& b) {
  if (a.names() != b.names()) return false;
  for (const auto& [name, t] : a)
    if (!same_tensor(t, b.at(name))) return false;
  return true;
}

// "index": the sample's index; "image": a [3, 5, 6] uint8 image whose values depend on it.
inline std::shared_ptr<data::TensorDataset> indexed_images(int64_t n) {
  Tensor images = arange(0, n * 90, 1, kLong).reshape({n, 3, 5, 6});
  Tensor bytes = empty({n, 3, 5, 6}, kByte);
  const int64_t* src = images.data_ptr<int64_t>();
  for (int64_t i = 0; i < images.numel(); ++i) bytes.data_ptr<uint8_t>()[i] = static_cast<uint8_t>((src[i] * 7) % 251);
  return std::make_shared<data::TensorDataset>(data::Sample::Fields{{"index", arange(n)}, {"image", bytes}});
}

// Runs `body` on a thread and fails the whole test program if it has not returned after
// `limit`: a deadlock must end the run with a verdict, not hang it. Not a timing check: the
// limit is far above what the body needs.
template <class F>
void within_deadline(F body, std::chrono::seconds limit = std::chrono::seconds(120)) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([done, body = std::move(body)]() mutable {
    try {
      body();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (finished.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: the loader did not finish within %lld s (deadlock?)\n",
                 static_cast<long long>(limit.count()));
    std::_Exit(1);
  }
  finished.get();
}

}  // namespace strider::testing
