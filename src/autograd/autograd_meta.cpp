// Autograd state of tensors, leaf accumulation, and the Tensor methods about gradients.
#include "strider/autograd/autograd_meta.h"

#include <atomic>

#include "autograd/hook_result.h"
#include "core/make_tensor.h"
#include "strider/autograd/engine.h"
#include "strider/autograd/grad_buffer.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"

namespace strider::autograd {
namespace {

// Sums gradients into a leaf's .grad(), in the leaf's own layout (a channels-last parameter gets
// a channels-last gradient), or into the buffer its owner gave it (grad_buffer.h), then runs its
// post-accumulate hooks.
// PyTorch's layout contract for a leaf's .grad (torch/csrc/autograd/utils/grad_layout_contract.h):
// a dense leaf's gradient has the leaf's strides on every dim of size above 1 (and no 0 stride on
// a size-1 dim, which would be a view); any other leaf's gradient is contiguous. A gradient that
// obeys it is kept as it came, so its strides on size-1 dims are its own, as in PyTorch.
bool obeys_layout_contract(const Tensor& g, const Tensor& var) {
  if (!var.is_non_overlapping_and_dense()) return g.is_contiguous();
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (g.sizes()[d] != 1 ? g.strides()[d] != var.strides()[d] : g.strides()[d] == 0) return false;
  }
  return true;
}

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& variable)
      : Node("AccumulateGrad"), variable_(variable.impl_ptr()) {}

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor var(variable_);
    AutogradMeta& m = ensure_meta(var);
    Tensor g = std::move(grads[0]);
    for (auto& [id, hook] : m.leaf_hooks) {
      Tensor r = hook(g);
      if (r.defined()) g = checked_hook_result(g, r);
    }
    NoGradGuard no_grad;
    if (g.dtype() != var.dtype()) g = ops::to(g, var.dtype());
    const bool same_layout = obeys_layout_contract(g, var);
    if (m.grad_buffer.defined() && (!m.grad.defined() || m.grad.is_same(m.grad_buffer))) {
      if (m.grad.defined()) {
        ops::add_(m.grad_buffer, g);
      } else {
        ops::copy_(m.grad_buffer, g);
        m.grad = m.grad_buffer;
      }
    } else if (!m.grad.defined()) {
      // Steal a gradient nobody else holds; otherwise copy it into the leaf's layout.
      if (same_layout && g.impl_ptr().use_count() == 1) {
        m.grad = g;
      } else {
        m.grad = var.is_non_overlapping_and_dense() ? empty_strided(var.sizes(), var.strides(), var.dtype())
                                                    : empty(var.sizes(), var.dtype());
        ops::copy_(m.grad, g);
      }
    } else {
      // Out of place: an earlier .grad() may be shared with a user or another leaf.
      Tensor sum = ops::add(m.grad, g);
      if (sum.strides() != m.grad.strides()) {
        Tensor laid = empty_like(m.grad);
        ops::copy_(laid, sum);
        sum = laid;
      }
      m.grad = sum;
    }
    for (auto& hook : m.post_accumulate_hooks) hook(var);
    return {};
  }

 private:
  // Holding the impl keeps the parameter alive while a graph references it, as PyTorch does.
  std::shared_ptr<TensorImpl> variable_;
};

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = ensure_meta(t);
  if (auto acc = m.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  m.grad_accumulator = acc;
  return acc;
}

// Hook handles are unique in the process; threads register hooks concurrently (a data loader's
// worker, FSDP's unit construction), so the counter is atomic.
std::atomic<int> g_next_hook_id{0};

}  // namespace

AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}

AutogradMeta& ensure_meta(const Tensor& t) {
  if (auto* m = meta_of(t)) return *m;
  (void)t.dim();  // an undefined tensor throws here, naming the problem
  t.impl()->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *meta_of(t);
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  AutogradMeta* m = meta_of(t);
  if (!m || !m->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  return {grad_accumulator(t), 0};
}

void set_grad_buffer(const Tensor& leaf, const Tensor& buffer) {
  if (!buffer.defined()) {
    if (auto* m = meta_of(leaf)) m->grad_buffer = Tensor();
    return;
  }
  STRIDER_CHECK(leaf.is_leaf() && leaf.requires_grad(), "set_grad_buffer",
                "only a leaf that requires grad accumulates gradients");
  STRIDER_CHECK(buffer.sizes() == leaf.sizes() && buffer.strides() == leaf.strides() && buffer.dtype() == leaf.dtype(),
                "set_grad_buffer", "a gradient buffer must have the leaf's shape ", leaf.sizes(), ", strides ",
                leaf.strides(), " and dtype ", leaf.dtype(), "; got ", buffer.sizes(), ", ", buffer.strides(), ", ",
                buffer.dtype());
  ensure_meta(leaf).grad_buffer = buffer;
}

const Tensor& grad_buffer(const Tensor& leaf) {
  static const Tensor kUndefined;
  auto* m = meta_of(leaf);
  return m ? m->grad_buffer : kUndefined;
}

}  // namespace strider::autograd

namespace strider {

using autograd::ensure_meta;
using autograd::meta_of;

bool Tensor::requires_grad() const {
  auto* m = meta_of(*this);
  return m && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  auto* m = meta_of(*this);
  STRIDER_CHECK(!(m && m->grad_fn) || requires_grad, "requires_grad_",
                "you can only change requires_grad flags of leaf tensors; this one was computed by ",
                m->grad_fn->name(), ". Use detach() to get a leaf");
  STRIDER_CHECK(!requires_grad || is_floating_point(dtype()), "requires_grad_",
                "only floating-point tensors can require gradients, but this one is ", dtype(),
                " (shape ", sizes(), ")");
  ensure_meta(*this).requires_grad = requires_grad;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor kUndefined;
  auto* m = meta_of(*this);
  return m ? m->grad : kUndefined;
}

Tensor& Tensor::mutable_grad() { return ensure_meta(*this).grad; }

void Tensor::set_grad(const Tensor& g) {
  STRIDER_CHECK(!g.defined() || g.sizes() == sizes(), "set_grad", "gradient of shape ", g.sizes(),
                " does not match the tensor's shape ", sizes());
  STRIDER_CHECK(!g.defined() || g.dtype() == dtype(), "set_grad", "assigned gradient has dtype ", g.dtype(),
                ", the tensor ", dtype(), " (PyTorch refuses it too); convert it with .to(", dtype(), ")");
  ensure_meta(*this).grad = g;
}

void Tensor::set_data(const Tensor& data) const {
  STRIDER_CHECK(defined() && data.defined(), "set_data", "both tensors must be defined");
  // Bytes a wrapper laid out (FSDP's shards, whose markers live on the storage) or retired: the
  // tensor would leave them and the wrapper would never see its new values.
  const StorageImpl& mine = *storage();
  STRIDER_CHECK(!mine.shard_of() && !mine.retired_reason() && !mine.has_step_check(), "set_data",
                "this tensor's memory belongs to ",
                mine.shard_of() ? *mine.shard_of() : std::string("a wrapper (or was retired)"),
                "; change it through the wrapper (load a state dict) instead");
  STRIDER_CHECK(!requires_grad() || is_floating_point(data.dtype()), "set_data", "a tensor that requires grad cannot "
                "take ", data.dtype(), " data: only floating-point tensors can require gradients");
  if (auto* m = meta_of(*this)) {
    STRIDER_CHECK(!m->grad.defined() || (m->grad.sizes() == data.sizes() && m->grad.dtype() == data.dtype()),
                  "set_data", "the tensor's gradient (", m->grad.dtype(), " ", m->grad.sizes(),
                  ") would not match the new data (", data.dtype(), " ", data.sizes(),
                  "); convert it or drop it (set_grad(Tensor())) first");
    const Tensor& buffer = m->grad_buffer;
    if (buffer.defined() && (buffer.sizes() != data.sizes() || buffer.strides() != data.strides() ||
                             buffer.dtype() != data.dtype()))
      m->grad_buffer = Tensor();
    m->grad_accumulator.reset();  // a graph built before sees the old geometry
  }
  impl()->set_data(*data.impl());
}

bool Tensor::is_leaf() const {
  auto* m = meta_of(*this);
  return !m || !m->grad_fn;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  auto* m = meta_of(*this);
  return m ? m->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph);
}

Tensor Tensor::detach() const { return alias(*this); }

void Tensor::retain_grad() const {
  auto* m = meta_of(*this);
  STRIDER_CHECK(m && m->requires_grad, "retain_grad", "can't retain_grad on a tensor that has requires_grad=false");
  if (!m->grad_fn || m->retains_grad) return;
  m->retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_ptr();
  register_hook([weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      Tensor self(impl);
      auto& mm = ensure_meta(self);
      mm.grad = mm.grad.defined() ? ops::add(mm.grad, g) : ops::clone(g);
    }
    return Tensor();
  });
}

int Tensor::register_hook(std::function<Tensor(const Tensor&)> fn) const {
  auto* m = meta_of(*this);
  STRIDER_CHECK(m && m->requires_grad, "register_hook",
                "cannot register a hook on a tensor that doesn't require gradient");
  const int id = autograd::g_next_hook_id.fetch_add(1, std::memory_order_relaxed);
  if (m->grad_fn) {
    auto& hooks = m->grad_fn->pre_hooks();
    if (hooks.size() <= m->output_nr) hooks.resize(m->output_nr + 1);
    hooks[m->output_nr].emplace_back(id, std::move(fn));
  } else {
    m->leaf_hooks.emplace_back(id, std::move(fn));
  }
  return id;
}

void Tensor::remove_hook(int handle) const {
  auto* m = meta_of(*this);
  if (!m) return;
  auto drop = [handle](auto& v) {
    std::erase_if(v, [handle](const auto& p) { return p.first == handle; });
  };
  drop(m->leaf_hooks);
  if (m->grad_fn)
    for (auto& per_output : m->grad_fn->pre_hooks()) drop(per_output);
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> fn) const {
  STRIDER_CHECK(is_leaf() && requires_grad(), "register_post_accumulate_grad_hook",
                "post-accumulate-grad hooks can only be registered on leaf tensors that require grad");
  ensure_meta(*this).post_accumulate_hooks.push_back(std::move(fn));
}

}  // namespace strider
