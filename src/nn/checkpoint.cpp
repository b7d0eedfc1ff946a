#include "strider/nn/checkpoint.h"

#include <memory>
#include <string>
#include <vector>

#include "strider/autograd/engine.h"
#include "strider/autograd/grad_mode.h"
#include "strider/autograd/record.h"
#include "strider/core/error.h"
#include "strider/core/generator.h"
#include "strider/ops/factory.h"

namespace strider::nn {
namespace {

constexpr const char* kKind = "checkpoint";

thread_local int t_forward = 0, t_recomputing = 0;

struct Scope {
  explicit Scope(int& depth) : depth_(depth) { ++depth_; }
  ~Scope() { --depth_; }
  int& depth_;
};

// Puts the default generator where it was at the checkpointed forward and back afterwards,
// so the recomputation draws what the forward drew and the run's stream is undisturbed.
class ReplayedGenerator {
 public:
  explicit ReplayedGenerator(const Generator& at_forward) : now_(default_generator()) {
    default_generator() = at_forward;
  }
  ~ReplayedGenerator() { default_generator() = now_; }

 private:
  Generator now_;
};

bool differentiable(const Tensor& t) { return t.defined() && is_floating_point(t.dtype()); }

// The parameter tensors a module (and everything under it) shows when its call begins. A wrapper
// sharding an enclosing unit (FSDP) has put the gathered tensors there by then and shows shards
// again in backward; the recomputation gets back what the forward used, and its own units'
// hooks, inside the call, swap in theirs as in the forward.
struct RegistrySnapshot {
  struct Entry {
    Module* owner;
    std::string name;
    Tensor tensor;
  };
  std::vector<Entry> entries;

  static RegistrySnapshot of(Module& m) {
    RegistrySnapshot s;
    m.apply([&](Module& sub) {
      for (auto& [name, t] : sub.named_parameters(false, /*remove_duplicate=*/false)) s.entries.push_back({&sub, name, t});
    });
    return s;
  }
};

// Shows a snapshot's tensors for the recomputation and puts the current ones back afterwards.
class ShownRegistry {
 public:
  explicit ShownRegistry(const RegistrySnapshot& at_forward) : now_(at_forward) {
    for (auto& e : now_.entries) {
      Tensor shown = e.tensor;
      e.tensor = e.owner->param(e.name);
      e.owner->set_param(e.name, shown);
    }
  }
  ~ShownRegistry() {
    for (auto& e : now_.entries) e.owner->set_param(e.name, e.tensor);
  }

 private:
  RegistrySnapshot now_;
};

// What a checkpointed call keeps for its backward: the arguments (the tensors among them are
// the checkpoint's only saved activations), their versions, and the generator's state.
struct Saved {
  Args args;
  std::vector<autograd::SavedTensor> inputs;  // the differentiable tensors of args, in order
  std::vector<bool> input_requires_grad;
  Generator generator;
  RegistrySnapshot registry;
  Module::Proceed proceed;
  std::string module;  // for messages
};

Value checkpointed_call(Module& m, Args args, const Module::Proceed& proceed) {
  if (!autograd::GradMode::is_enabled()) return proceed(std::move(args));
  auto saved = std::make_shared<Saved>();
  saved->generator = default_generator();
  saved->registry = RegistrySnapshot::of(m);
  saved->proceed = proceed;
  saved->module = m.type_name();
  std::vector<Tensor> node_inputs;
  for_each_tensor(args, [&](const Tensor& t) {
    if (!differentiable(t)) return;
    saved->inputs.emplace_back(t);
    saved->input_requires_grad.push_back(t.requires_grad());
    node_inputs.push_back(t);
  });
  // The module's parameters need their gradients even when no input requires one (the first
  // module after an embedding lookup of token ids): this leaf makes the node record regardless.
  Tensor anchor = zeros({}, kFloat);
  anchor.requires_grad_(true);
  node_inputs.push_back(anchor);
  saved->args = args;

  Value out;
  {
    autograd::NoGradGuard no_grad;
    Scope forward(t_forward);
    out = proceed(std::move(args));
  }
  std::vector<Tensor> outputs;
  for_each_tensor(out, [&](const Tensor& t) {
    if (differentiable(t)) outputs.push_back(t.detach());  // never the node's input itself
  });
  if (outputs.empty()) return out;
  const size_t n_inputs = saved->inputs.size();
  autograd::record("CheckpointBackward", node_inputs, outputs,
                   [saved, n_inputs](const std::vector<Tensor>& grads, const autograd::Node&) {
                     std::vector<Tensor> detached;
                     for (size_t i = 0; i < n_inputs; ++i) {
                       Tensor t = saved->inputs[i].unpack(("checkpoint of " + saved->module).c_str()).detach();
                       if (saved->input_requires_grad[i]) t.requires_grad_(true);
                       detached.push_back(t);
                     }
                     size_t k = 0;
                     Args replay = map_tensors(saved->args, [&](const Tensor& t) {
                       return differentiable(t) ? detached[k++] : t;
                     });
                     Value again;
                     {
                       autograd::EnableGradGuard grad_on;
                       Scope recomputing(t_recomputing);
                       ReplayedGenerator replayed(saved->generator);
                       ShownRegistry shown(saved->registry);
                       again = saved->proceed(std::move(replay));
                     }
                     std::vector<Tensor> roots, root_grads;
                     size_t j = 0;
                     for_each_tensor(again, [&](const Tensor& t) {
                       if (!differentiable(t)) return;
                       STRIDER_CHECK(j < grads.size(), "checkpoint", saved->module,
                                     " returned more tensors when recomputed than in forward; its forward must "
                                     "depend only on its inputs, parameters and the default generator");
                       if (t.requires_grad()) {
                         roots.push_back(t);
                         root_grads.push_back(grads[j]);
                       }
                       ++j;
                     });
                     STRIDER_CHECK(j == grads.size(), "checkpoint", saved->module, " returned ", j,
                                   " tensors when recomputed but ", grads.size(),
                                   " in forward; its forward must depend only on its inputs, parameters and "
                                   "the default generator");
                     if (!roots.empty()) autograd::backward(roots, root_grads);
                     std::vector<Tensor> input_grads;
                     for (size_t i = 0; i < n_inputs; ++i)
                       input_grads.push_back(saved->input_requires_grad[i] ? detached[i].grad() : Tensor());
                     input_grads.push_back(Tensor());  // the anchor
                     return input_grads;
                   });
  size_t next = 0;
  return map_tensors(out, [&](const Tensor& t) { return differentiable(t) ? outputs[next++] : t; });
}

}  // namespace

void checkpoint(Module& module) {
  if (!module.has_call_wrapper(kKind)) module.register_call_wrapper(kKind, checkpointed_call);
}

int apply_activation_checkpointing(Module& root, const std::function<bool(Module&)>& check_fn) {
  STRIDER_CHECK(check_fn != nullptr, "apply_activation_checkpointing", "check_fn is empty");
  int n = 0;
  root.apply([&](Module& m) {
    if (check_fn(m) && !is_checkpointed(m)) {
      checkpoint(m);
      ++n;
    }
  });
  return n;
}

bool is_checkpointed(const Module& module) { return module.has_call_wrapper(kKind); }

bool in_checkpointed_forward() { return t_forward > 0 && t_recomputing == 0; }

bool in_recomputation() { return t_recomputing > 0; }

}  // namespace strider::nn
