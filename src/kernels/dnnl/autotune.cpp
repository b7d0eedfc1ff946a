#include "kernels/dnnl/autotune.h"

#include <chrono>
#include <cstdio>
#include <limits>
#include <string>

namespace strider::kernels::dnnl_ops {
namespace {

double seconds_of(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  execute(prim, args);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Candidate {
  std::string name;
  double seconds;
};

}  // namespace

dnnl::memory reordered_copy(const dnnl::memory& user, const dnnl::memory::desc& want, std::vector<Tensor>& keep) {
  if (user.get_desc() == want) return user;
  keep.emplace_back();
  dnnl::memory copy = allocate(want, keep.back());
  reorder_into(user, copy);
  return copy;
}

void walk(dnnl::primitive_desc pd, const Visit& visit) {
  while (visit(pd) && pd.next_impl()) {
  }
}

dnnl::primitive_desc choose_implementation(const char* op, const EachImplementation& each, const BindArgs& bind) {
  dnnl::primitive_desc chosen;
  if (!Context::process().kernel_autotune.load()) {
    each([&](const dnnl::primitive_desc& pd) {
      chosen = pd;
      return false;
    });
    return chosen;
  }
  std::vector<Candidate> timed;
  double best = std::numeric_limits<double>::infinity();
  each([&](const dnnl::primitive_desc& pd) {
    const std::string name = pd.impl_info_str();
    if (name.rfind("ref", 0) == 0) return true;
    for (const Candidate& c : timed)
      if (c.name == name) return true;  // a walk may list one implementation twice
    std::vector<Tensor> keep;
    const auto args = bind(pd, keep);
    const dnnl::primitive prim(pd);
    double t = seconds_of(prim, args);  // warm-up: page faults, caches
    // A candidate three times slower than the best so far is not timed further: some
    // (gemm-based ones) take seconds on a large batch.
    if (t < 3 * best) t = std::min(seconds_of(prim, args), seconds_of(prim, args));
    if (t < best || !chosen) chosen = pd;  // a copy: the walk moves on from this one
    best = std::min(best, t);
    timed.push_back({name, t});
    return true;
  });
  if (!chosen) {  // only reference implementations
    each([&](const dnnl::primitive_desc& pd) {
      chosen = pd;
      return false;
    });
  }
  if (Context::process().kernel_verbose.load()) {
    std::string line = std::string("strider: ") + op + " autotune -> " + chosen.impl_info_str() + ";";
    for (const Candidate& c : timed) line += " " + c.name + " " + std::to_string(c.seconds * 1e3) + " ms";
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return chosen;
}

}  // namespace strider::kernels::dnnl_ops
