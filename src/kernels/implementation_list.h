#pragma once
// An op family's ordered list of implementations (oneDNN's cpu_convolution_list, in small):
// each entry says whether it can run a problem and, if not, why; the first that can, runs. The
// reference comes last and accepts everything. Ops build the problem and call the family's
// entry point; they know no backend.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "strider/core/error.h"

namespace strider::kernels {

// How the ops layer wants this call dispatched.
struct Dispatch {
  const char* op = nullptr;     // the user-facing name for the log ("conv2d"); the family's if null
  bool reference_only = false;  // run the reference (tests' oracle)
  bool verbose = false;         // log the choice and every rejection to stderr
};

// Thrown by an implementation's run() when it finds it cannot run the problem after all (oneDNN
// could not create a primitive for it on this CPU): the list moves on to the next implementation,
// and the reason joins the rejections. It may have written part of the outputs already; every
// implementation writes every element of its outputs, so the next one overwrites them.
struct ImplementationDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Problem>
struct Implementation {
  const char* name;                           // "onednn", "cpu", "ref"
  std::string (*rejects)(const Problem& p);   // why it cannot run p; empty when it can
  void (*run)(const Problem& p);
};

template <class Problem>
using ImplementationList = std::vector<Implementation<Problem>>;

// Runs the first implementation of `list` that accepts `p` and returns its name. When none does
// (a reference that needs something an earlier step did not leave, such as max pooling's
// indices), the error lists every rejection.
template <class Problem>
const char* run_first(const char* op, const ImplementationList<Problem>& list, const Problem& p, const Dispatch& d) {
  std::string rejected;
  for (size_t i = 0; i < list.size(); ++i) {
    const Implementation<Problem>& impl = list[i];
    const bool reference = i + 1 == list.size();
    const std::string why = d.reference_only && !reference ? "the reference was requested" : impl.rejects(p);
    if (!why.empty()) {
      rejected += std::string("; ") + impl.name + " rejected: " + why;
      continue;
    }
    try {
      impl.run(p);
    } catch (const ImplementationDeclined& e) {
      rejected += std::string("; ") + impl.name + " declined: " + e.what();
      continue;
    }
    if (d.verbose) std::fprintf(stderr, "strider: %s -> %s%s\n", d.op ? d.op : op, impl.name, rejected.c_str());
    return impl.name;
  }
  STRIDER_CHECK(false, d.op ? d.op : op, "no implementation can run this call", rejected);
  return nullptr;
}

}  // namespace strider::kernels
