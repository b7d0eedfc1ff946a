#include "strider/autograd/node.h"

#include <atomic>

#include "core/make_tensor.h"
#include "strider/ops/convert.h"

namespace strider::autograd {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node(std::string name) : name_(std::move(name)), sequence_nr_(g_next_sequence_nr++) {}

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  data_ = alias(t);
  version_ = t.storage()->version();
}

Tensor SavedTensor::unpack(const char* op) const {
  if (!data_.defined()) return data_;
  STRIDER_CHECK(data_.storage()->version() == version_, op,
                "one of the tensors needed for gradient computation has been modified by an "
                "in-place operation (tensor ", data_.sizes(), " ", data_.dtype(), ", version ",
                data_.storage()->version(), ", saved at version ", version_,
                "); clone() it before modifying, or modify it out of place");
  return data_;
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  STRIDER_CHECK(fn_ != nullptr, name().c_str(),
                "trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed); pass retain_graph=true to the first "
                "backward if you need to backward twice");
  return fn_(grads, *this);
}

}  // namespace strider::autograd
