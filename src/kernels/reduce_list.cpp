// The reduction and softmax implementation lists: the vectorized kernels take every problem;
// the reference follows as the oracle.
#include "kernels/reduce.h"
#include "kernels/softmax.h"

namespace strider::kernels {

const ImplementationList<ReduceProblem>& reduce_implementations() {
  static const ImplementationList<ReduceProblem> list = {
      {"cpu", [](const ReduceProblem&) { return std::string(); },
       [](const ReduceProblem& p) { cpu::reduce(p.op, p.out, p.in, p.args); }},
      {"ref", [](const ReduceProblem&) { return std::string(); },
       [](const ReduceProblem& p) { ref::reduce(p.op, p.out, p.in, p.args); }},
  };
  return list;
}

const ImplementationList<SoftmaxProblem>& softmax_implementations() {
  static const ImplementationList<SoftmaxProblem> list = {
      {"cpu", [](const SoftmaxProblem&) { return std::string(); },
       [](const SoftmaxProblem& p) { cpu::softmax(p.out, p.in, p.dim, p.log); }},
      {"ref", [](const SoftmaxProblem&) { return std::string(); },
       [](const SoftmaxProblem& p) { ref::softmax(p.out, p.in, p.dim, p.log); }},
  };
  return list;
}

void reduce(const ReduceProblem& p, const Dispatch& d) { run_first(name(p.op), reduce_implementations(), p, d); }
void softmax(const SoftmaxProblem& p, const Dispatch& d) {
  run_first(p.log ? "log_softmax" : "softmax", softmax_implementations(), p, d);
}

}  // namespace strider::kernels
