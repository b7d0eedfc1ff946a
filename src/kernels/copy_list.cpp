// The copy and fill implementation lists: the fast kernels take every problem; the reference
// follows as the oracle.
#include "kernels/copy.h"

namespace strider::kernels {

const ImplementationList<CopyProblem>& copy_implementations() {
  static const ImplementationList<CopyProblem> list = {
      {"cpu", [](const CopyProblem&) { return std::string(); }, [](const CopyProblem& p) { cpu::copy(p.dst, p.src); }},
      {"ref", [](const CopyProblem&) { return std::string(); }, [](const CopyProblem& p) { ref::copy(p.dst, p.src); }},
  };
  return list;
}

const ImplementationList<FillProblem>& fill_implementations() {
  static const ImplementationList<FillProblem> list = {
      {"cpu", [](const FillProblem&) { return std::string(); }, [](const FillProblem& p) { cpu::fill(p.dst, p.value); }},
      {"ref", [](const FillProblem&) { return std::string(); }, [](const FillProblem& p) { ref::fill(p.dst, p.value); }},
  };
  return list;
}

void copy(const CopyProblem& p, const Dispatch& d) { run_first("copy_", copy_implementations(), p, d); }
void fill(const FillProblem& p, const Dispatch& d) { run_first("fill_", fill_implementations(), p, d); }

}  // namespace strider::kernels
