#pragma once
// The graph: a Node turns gradients w.r.t. its outputs into gradients w.r.t. its inputs and
// forwards them along its next edges. Ops record one Node per differentiable call.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::autograd {

class Node;

// Where a gradient goes: input slot `input_nr` of node `fn` (an AccumulateGrad for leaves).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

using TensorHook = std::function<Tensor(const Tensor&)>;

// Geometry of one output, to materialize a zero gradient when that output got none.
struct OutputMeta {
  DimVector sizes, strides;
  ScalarType dtype = kFloat;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(std::string name);
  virtual ~Node() = default;

  // grads[i] is the gradient w.r.t. output i (never undefined: the engine fills zeros); returns
  // one gradient per next edge (undefined where the input needs none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Drops saved tensors once backward ran without retain_graph.
  virtual void release_variables() {}

  const std::string& name() const { return name_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  std::vector<Edge>& next_edges() { return next_edges_; }
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }
  std::vector<OutputMeta>& output_meta() { return output_meta_; }
  // Hooks on the gradient of output `nr`, run before apply (tensor hooks of non-leaf tensors).
  std::vector<std::vector<std::pair<int, TensorHook>>>& pre_hooks() { return pre_hooks_; }

 private:
  std::string name_;
  uint64_t sequence_nr_;
  std::vector<Edge> next_edges_;
  std::vector<OutputMeta> output_meta_;
  std::vector<std::vector<std::pair<int, TensorHook>>> pre_hooks_;
};

// A tensor saved for backward, with the storage version at save time: using it after an in-place
// write would silently give wrong gradients, so unpack() throws instead.
class SavedTensor {
 public:
  SavedTensor() = default;
  // Saves a graph-free alias (no reference cycle when an op saves its own output).
  explicit SavedTensor(const Tensor& t);
  Tensor unpack(const char* op) const;
  void reset() { data_ = Tensor(); }

 private:
  Tensor data_;
  uint64_t version_ = 0;
};

using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads, const Node& node)>;

// A node whose backward is a function object; what it captures is released after backward.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_variables() override { fn_ = nullptr; }

 private:
  BackwardFn fn_;
};

}  // namespace strider::autograd
