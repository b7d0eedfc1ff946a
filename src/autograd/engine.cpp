// The backward pass: count each node's producers, then run nodes whose gradients are complete,
// latest-created first (so a chain runs in reverse order of the forward), summing gradients that
// reach the same input slot.
#include "strider/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/hook_result.h"
#include "strider/autograd/autograd_meta.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"

namespace strider::autograd {
namespace {

struct ByLatest {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

Tensor zeros_for(const OutputMeta& m) {
  Tensor z = empty_strided(m.sizes, m.strides, m.dtype);
  ops::zero_(z);
  return z;
}

// Callbacks queued by the backward running on this thread (nested backwards get their own list).
thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;

void accumulate(std::vector<Tensor>& buffer, uint32_t slot, Tensor grad) {
  if (buffer.size() <= slot) buffer.resize(slot + 1);
  Tensor& cur = buffer[slot];
  cur = cur.defined() ? ops::add(cur, grad) : std::move(grad);
}

using GradBuffers = std::unordered_map<Node*, std::vector<Tensor>>;

// Puts each root's gradient (given, or 1 for a one-element root) into its node's buffer and
// returns the root nodes.
std::vector<std::shared_ptr<Node>> seed_roots(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs,
                                              GradBuffers& buffers) {
  STRIDER_CHECK(grad_outputs.empty() || grad_outputs.size() == roots.size(), "backward",
                "got ", grad_outputs.size(), " gradients for ", roots.size(), " tensors");
  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    Edge e = gradient_edge(r);
    STRIDER_CHECK(e.valid(), "backward", "element ", i, " of tensors does not require grad and does "
                  "not have a grad_fn (shape ", r.sizes(), "); call requires_grad_() on the inputs "
                  "and make sure grad mode is on");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      STRIDER_CHECK(r.numel() == 1, "backward", "grad can be implicitly created only for tensors "
                    "with one element, but this one has shape ", r.sizes(), "; pass a gradient");
      g = ones_like(r);
    }
    STRIDER_CHECK(g.sizes() == r.sizes(), "backward", "gradient of shape ", g.sizes(),
                  " does not match the tensor's shape ", r.sizes());
    accumulate(buffers[e.fn.get()], e.input_nr, g);
    root_nodes.push_back(e.fn);
  }
  return root_nodes;
}

// How many edges of the graph reachable from `root_nodes` lead into each node.
std::unordered_map<Node*, int> count_producers(const std::vector<std::shared_ptr<Node>>& root_nodes) {
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (auto& n : root_nodes)
    if (seen.insert(n.get()).second) stack.push_back(n.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  return deps;
}

// The gradients arriving at `node`, taken from its buffer, after the tensor hooks of its
// outputs; the captured edges' gradients are stored.
std::vector<Tensor> take_inputs(Node* node, GradBuffers& buffers, const std::vector<Edge>* captures,
                                std::vector<Tensor>* captured) {
  std::vector<Tensor> inputs = std::move(buffers[node]);
  buffers.erase(node);
  const size_t n_out = std::max(node->output_meta().size(), inputs.size());
  inputs.resize(std::max<size_t>(n_out, 1));
  auto& hooks = node->pre_hooks();
  for (size_t slot = 0; slot < hooks.size() && slot < inputs.size(); ++slot)
    for (auto& [id, hook] : hooks[slot])
      if (inputs[slot].defined()) {
        Tensor r = hook(inputs[slot]);
        if (r.defined()) inputs[slot] = checked_hook_result(inputs[slot], r);
      }
  if (captures)
    for (size_t i = 0; i < captures->size(); ++i) {
      const Edge& c = (*captures)[i];
      if (c.fn.get() == node && c.input_nr < inputs.size() && inputs[c.input_nr].defined())
        (*captured)[i] = inputs[c.input_nr];
    }
  return inputs;
}

// Runs the graph from `roots`. With `captures`, gradients arriving at those edges are stored
// instead of accumulated into leaves, and no AccumulateGrad runs (autograd::grad).
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs,
                  bool retain_graph, const std::vector<Edge>* captures, std::vector<Tensor>* captured) {
  NoGradGuard no_grad;  // backward formulas themselves are not recorded
  std::vector<std::function<void()>> callbacks;
  auto* outer_callbacks = t_callbacks;
  t_callbacks = &callbacks;
  struct Restore {
    std::vector<std::function<void()>>* outer;
    ~Restore() { t_callbacks = outer; }
  } restore{outer_callbacks};
  GradBuffers buffers;
  const std::vector<std::shared_ptr<Node>> root_nodes = seed_roots(roots, grad_outputs, buffers);
  std::unordered_map<Node*, int> deps = count_producers(root_nodes);
  std::priority_queue<Node*, std::vector<Node*>, ByLatest> ready;
  for (auto& n : root_nodes)
    if (deps[n.get()] == 0) {
      deps[n.get()] = -1;  // queued
      ready.push(n.get());
    }
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> inputs = take_inputs(node, buffers, captures, captured);
    const bool is_accumulator = node->name() == "AccumulateGrad";
    if (is_accumulator && (captures || !inputs[0].defined())) continue;
    if (!is_accumulator)
      for (size_t slot = 0; slot < node->output_meta().size(); ++slot)
        if (!inputs[slot].defined()) inputs[slot] = zeros_for(node->output_meta()[slot]);
    std::vector<Tensor> outputs = node->apply(std::move(inputs));
    if (!retain_graph) node->release_variables();
    auto& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      if (!edges[i].valid()) continue;
      Node* next = edges[i].fn.get();
      if (i < outputs.size() && outputs[i].defined()) accumulate(buffers[next], edges[i].input_nr, outputs[i]);
      if (--deps[next] == 0) {
        deps[next] = -1;
        ready.push(next);
      }
    }
  }
  // Callbacks may queue more callbacks.
  for (size_t i = 0; i < callbacks.size(); ++i) {
    auto fn = std::move(callbacks[i]);
    fn();
  }
}

}  // namespace

void queue_callback(std::function<void()> fn) {
  STRIDER_CHECK(t_callbacks != nullptr, "queue_callback", "can only be called while a backward pass runs "
                "(from a hook or a backward function)");
  t_callbacks->push_back(std::move(fn));
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs, bool retain_graph) {
  run_backward(roots, grad_outputs, retain_graph, nullptr, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph) {
  std::vector<Edge> captures;
  for (const Tensor& in : inputs) {
    Edge e = gradient_edge(in);
    STRIDER_CHECK(e.valid(), "grad", "one of the differentiated tensors does not require grad (shape ",
                  in.sizes(), ")");
    captures.push_back(e);
  }
  std::vector<Tensor> result(inputs.size());
  run_backward(outputs, grad_outputs, retain_graph, &captures, &result);
  return result;
}

}  // namespace strider::autograd
