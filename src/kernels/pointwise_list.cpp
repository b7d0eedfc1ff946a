// The elementwise implementation lists: the vectorized kernels take every problem; the reference
// follows as the oracle (and for KernelPreference::Reference).
#include "kernels/pointwise.h"

namespace strider::kernels {
namespace {
template <class Problem>
std::string accept_all(const Problem&) { return ""; }
}  // namespace

const ImplementationList<UnaryProblem>& unary_implementations() {
  static const ImplementationList<UnaryProblem> list = {
      {"cpu", accept_all<UnaryProblem>, [](const UnaryProblem& p) { cpu::unary(p.op, p.out, p.in, p.args); }},
      {"ref", accept_all<UnaryProblem>, [](const UnaryProblem& p) { ref::unary(p.op, p.out, p.in, p.args); }},
  };
  return list;
}

const ImplementationList<BinaryProblem>& binary_implementations() {
  static const ImplementationList<BinaryProblem> list = {
      {"cpu", accept_all<BinaryProblem>, [](const BinaryProblem& p) { cpu::binary(p.op, p.out, p.a, p.b, p.args); }},
      {"ref", accept_all<BinaryProblem>, [](const BinaryProblem& p) { ref::binary(p.op, p.out, p.a, p.b, p.args); }},
  };
  return list;
}

const ImplementationList<WhereProblem>& where_implementations() {
  static const ImplementationList<WhereProblem> list = {
      {"cpu", accept_all<WhereProblem>, [](const WhereProblem& p) { cpu::where(p.out, p.cond, p.x, p.y); }},
      {"ref", accept_all<WhereProblem>, [](const WhereProblem& p) { ref::where(p.out, p.cond, p.x, p.y); }},
  };
  return list;
}

const ImplementationList<AddcmulProblem>& addcmul_implementations() {
  static const ImplementationList<AddcmulProblem> list = {
      {"cpu", accept_all<AddcmulProblem>,
       [](const AddcmulProblem& p) { cpu::addcmul(p.out, p.self, p.t1, p.t2, p.value); }},
      {"ref", accept_all<AddcmulProblem>,
       [](const AddcmulProblem& p) { ref::addcmul(p.out, p.self, p.t1, p.t2, p.value); }},
  };
  return list;
}

void unary(const UnaryProblem& p, const Dispatch& d) { run_first(name(p.op), unary_implementations(), p, d); }
void binary(const BinaryProblem& p, const Dispatch& d) { run_first(name(p.op), binary_implementations(), p, d); }
void where(const WhereProblem& p, const Dispatch& d) { run_first("where", where_implementations(), p, d); }
void addcmul(const AddcmulProblem& p, const Dispatch& d) { run_first("addcmul", addcmul_implementations(), p, d); }

}  // namespace strider::kernels
