#include "strider/autograd/record.h"

#include "core/make_tensor.h"
#include "strider/autograd/autograd_meta.h"

namespace strider::autograd {

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

namespace {

template <class Outputs>
void attach_outputs(const std::shared_ptr<Node>& node, const Outputs& outputs) {
  uint32_t nr = 0;
  for (Tensor* out : outputs) {
    node->output_meta().push_back({out->sizes().vec(), out->strides().vec(), out->dtype()});
    if (is_floating_point(out->dtype())) {
      // A fresh impl: the op's output may alias an input's impl (a no-op view, to() returning
      // self), whose autograd state must not change.
      AutogradMeta* existing = meta_of(*out);
      if (existing) *out = alias(*out);
      AutogradMeta& m = ensure_meta(*out);
      m.requires_grad = true;
      m.grad_fn = node;
      m.output_nr = nr;
    }
    ++nr;
  }
}

}  // namespace

void record(const char* name, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Tensor*> outputs, BackwardFn backward) {
  if (!any_requires_grad(inputs)) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  for (const Tensor* t : inputs) node->next_edges().push_back(t ? gradient_edge(*t) : Edge{});
  attach_outputs(node, outputs);
}

void record(const char* name, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, BackwardFn backward) {
  if (!GradMode::is_enabled()) return;
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && t.requires_grad();
  if (!any) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  for (const Tensor& t : inputs) node->next_edges().push_back(gradient_edge(t));
  std::vector<Tensor*> outs;
  for (Tensor& t : outputs) outs.push_back(&t);
  attach_outputs(node, outs);
}

void record(const char* name, const std::vector<Tensor>& inputs, Tensor* output, BackwardFn backward) {
  std::vector<Tensor> outputs = {*output};
  record(name, inputs, outputs, std::move(backward));
  *output = std::move(outputs[0]);
}

void check_inplace(const Tensor& t, const char* op) {
  if (GradMode::is_enabled()) {
    AutogradMeta* m = meta_of(t);
    STRIDER_CHECK(!(m && m->requires_grad), op, "a tensor that requires grad (shape ", t.sizes(),
                  m && m->grad_fn ? ", computed by " + m->grad_fn->name() : std::string(", a leaf"),
                  ") is being used in an in-place operation; wrap the update in NoGradGuard "
                  "(optimizer steps) or use the out-of-place op");
  }
  t.storage()->bump_version();
}

}  // namespace strider::autograd
