#include "fsdp/flat_param_unit.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "core/make_tensor.h"
#include "fsdp/gradient_scratch.h"
#include "fsdp/offload_step_stream.h"
#include "fsdp/offload_tier.h"
#include "fsdp/optimizer_in_backward.h"
#include "strider/autograd/engine.h"
#include "strider/autograd/grad_buffer.h"
#include "strider/autograd/grad_mode.h"
#include "strider/autograd/record.h"
#include "strider/core/layout.h"
#include "strider/nn/checkpoint.h"
#include "strider/nn/deferred_init.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/view.h"
#include "strider/ops/pointwise.h"

namespace strider::fsdp::detail {
namespace {

// A fresh 1-d tensor whose bytes come from `allocator` (compute memory or the offload tier).
Tensor flat_tensor(int64_t numel, ScalarType dtype, Allocator& allocator) {
  return make_tensor({numel}, {1}, dtype, allocator);
}

// Adds the seconds since it was made to a counter when it goes out of scope.
class AddElapsed {
 public:
  explicit AddElapsed(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~AddElapsed() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  AddElapsed(const AddElapsed&) = delete;
  AddElapsed& operator=(const AddElapsed&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};


MemoryFormat dense_format(const Tensor& p, const std::string& name) {
  if (p.is_contiguous()) return MemoryFormat::Contiguous;
  if (p.dim() == 4 && p.is_contiguous(MemoryFormat::ChannelsLast)) return MemoryFormat::ChannelsLast;
  if (p.dim() == 5 && p.is_contiguous(MemoryFormat::ChannelsLast3d)) return MemoryFormat::ChannelsLast3d;
  STRIDER_CHECK(false, "FullyShardedDataParallel", "parameter '", name, "' of shape ", p.sizes(), " has strides ",
                p.strides(), ", which are neither contiguous nor channels-last; make it dense first");
  return MemoryFormat::Contiguous;
}

}  // namespace

Allocator& TreeState::shard_allocator() { return tier ? static_cast<Allocator&>(*tier) : cpu_allocator(); }

FlatParamUnit::FlatParamUnit(TreeState& tree, nn::Module& module, std::vector<ParamRef> refs, ShardingPlan plan)
    : tree_(&tree), module_(module), plan_(std::move(plan)) {
  // A unit may own no parameters (a root whose module was wrapped entirely by the policy); it
  // still drives the iteration, with nothing to shard or reduce.
  name_ = refs.empty() ? "(root)" : refs.front().full_name;
  if (refs.empty()) plan_.shard_group = plan_.replica_group = nullptr;
  autograd::NoGradGuard no_grad;
  describe_params(refs);
  codec_ = tree.options.deterministic
               ? make_exact_codec(layout_.shard_numel(), tree.options.micro_batches, tree.pg->size(),
                                  plan_.replica_group ? plan_.replica_group->size() : 1, !plan_.flat_shards())
               : make_averaging_codec(layout_.shard_numel(), tree.reduce_dtype(dtype_));
  grads_in_place_ = codec_->reduces_in_place(grad_dtype());
  grad_seen_.assign(params_.size(), 0);
  accumulated_.assign(params_.size(), 0);
  reached_anywhere_.assign(params_.size(), 0);
  for (const ParamSlot& s : params_) {
    grads_expected_ += s.requires_grad ? 1 : 0;
    reduce_at_end_ |= s.requires_grad && !s.aliases.empty();
  }
  allocate_flat_buffers();
  place_params();
  // Offloaded shards go to the file as soon as they are drawn, so a model larger than RAM is
  // built one unit at a time (the previous unit's write overlaps this one's drawing).
  if (tree.tier) {
    tree.tier->wait_for_writes();
    tree.tier->evict(shard_flat_);
  }
  install_forward_hooks();
}

void ParamSlot::show(const Tensor& t) const {
  owner->set_param(name, t);
  for (const ParamAlias& a : aliases) a.owner->set_param(a.name, t);
}

bool ParamSlot::held_by(const nn::Module& m) const {
  return owner == &m || std::any_of(aliases.begin(), aliases.end(), [&](const ParamAlias& a) { return a.owner == &m; });
}

void FlatParamUnit::describe_params(const std::vector<ParamRef>& refs) {
  dtype_ = refs.empty() ? kFloat : refs.front().owner->param(refs.front().name).dtype();
  compute_dtype_ = tree_->compute_dtype(dtype_);
  std::vector<DimVector> shapes;
  for (const ParamRef& ref : refs) {
    Tensor p = ref.owner->param(ref.name);
    check_param(p, ref.full_name);
    params_.push_back({.owner = ref.owner, .name = ref.name, .full_name = ref.full_name, .strides = p.strides().vec(),
                       .format = dense_format(p, ref.full_name), .requires_grad = p.requires_grad(),
                       .shard = Tensor(), .full = Tensor(), .aliases = ref.aliases});
    shapes.push_back(p.sizes().vec());
  }
  layout_ = FlatLayout(shapes, plan_.shards());
}

void FlatParamUnit::check_param(const Tensor& p, const std::string& full_name) const {
  STRIDER_CHECK(p.dim() >= 1, "FullyShardedDataParallel", "parameter '", full_name,
                "' is 0-dimensional; FSDP shards along dim 0, so reshape it to [1]");
  STRIDER_CHECK(p.dtype() == dtype_, "FullyShardedDataParallel", "parameters of one unit share one flat buffer, "
                "but '", full_name, "' is ", p.dtype(), " while '", name_, "' is ", dtype_,
                "; cast the module to one dtype or wrap them in separate units");
  STRIDER_CHECK(is_floating_point(p.dtype()), "FullyShardedDataParallel", "parameter '", full_name,
                "' has dtype ", p.dtype(), "; only floating-point parameters can be trained");
  STRIDER_CHECK(!tree_->options.deterministic || p.dtype() == kFloat, "FullyShardedDataParallel", "parameter '",
                full_name, "' has dtype ", p.dtype(), "; deterministic mode sums float32 gradients exactly, so "
                "keep float32 parameters (bfloat16 compute goes through mixed_precision)");
}

void FlatParamUnit::allocate_flat_buffers() {
  if (!plan_.flat_shards()) return;  // the module keeps its own tensors
  shard_flat_ = flat_tensor(layout_.shard_numel(), dtype_, tree_->shard_allocator());
  shard_flat_.storage()->mark_shard_of("FullyShardedDataParallel unit '" + name_ + "' (" +
                                       to_string(plan_.strategy) + ")");
  ops::zero_(shard_flat_);
  full_flat_ = flat_tensor(layout_.full_numel(), compute_dtype_, cpu_allocator());
  if (plan_.full_params_persist) ops::zero_(full_flat_);  // padding rows stay zero
}

void FlatParamUnit::place_params() {
  const bool flat = plan_.flat_shards();
  std::vector<Tensor> originals;  // the parameters as the module held them before the wrap
  for (size_t i = 0; i < params_.size(); ++i) originals.push_back(place_param(i));
  // Where the module no longer holds its original tensor, the values now live elsewhere (the
  // shards, or the memory a deferred parameter was materialized into): a handle kept from before
  // the wrap (an optimizer built on the unwrapped model, say) is named when used, not silently stale.
  for (size_t i = 0; i < originals.size(); ++i) {
    if (originals[i].impl_ptr() == params_[i].shard.impl_ptr()) continue;
    const std::string where = flat ? "FullyShardedDataParallel's shards" : "the tensor it was materialized into";
    originals[i].storage()->retire("its values moved into " + where + " when the model was wrapped (parameter '" +
                                   params_[i].full_name + "'), so a tensor taken from the module before wrap() no "
                                   "longer holds it. Build the optimizer (and take parameters) from the wrapped "
                                   "model's named_parameters() after wrap()");
  }
  if (flat && plan_.full_params_persist) {
    state_ = State::Gathered;
    gathered_version_ = shard_flat_.storage()->version();
  } else if (flat) {
    full_flat_.storage()->release();
  } else {
    state_ = State::Gathered;  // the module's own tensors: always in use
  }
}

Tensor FlatParamUnit::place_param(size_t i) {
  ParamSlot& s = params_[i];
  const FlatParam& at = layout_[i];
  Tensor p = s.owner->param(s.name);
  const Tensor original = p;
  // A deferred stand-in (nn/deferred_init.h) is drawn straight into the rows this rank keeps.
  const bool deferred = nn::is_deferred(p);
  auto fill = [&](const Tensor& dst, int64_t row_begin) {
    if (deferred) nn::materialize_rows(p, s.full_name, row_begin, dst);
    else ops::copy_(dst, p.narrow(0, row_begin, dst.size(0)));
  };
  if (plan_.flat_shards()) {
    const DimVector shard_sizes = at.shard_sizes();
    Tensor shard = shard_flat_.as_strided(shard_sizes, layout::strides_for_format(shard_sizes, s.format, "fsdp"),
                                          at.shard_offset).detach();
    const RowRange mine = at.rows_of(plan_.shard_rank());
    if (mine.size() > 0) fill(shard.narrow(0, 0, mine.size()), mine.begin);
    s.shard = shard.requires_grad_(s.requires_grad);
    s.full = full_flat_.as_strided(at.sizes, s.strides, at.full_offset).detach();
    if (plan_.full_params_persist) fill(s.full, 0);  // every rank holds them already
    if (s.requires_grad) s.full.requires_grad_(true);
  } else {
    if (deferred) p = nn::materialize_tensor(p, s.full_name).requires_grad_(s.requires_grad);
    s.shard = p;
    s.full = p;
  }
  s.show(s.shard);
  if (s.requires_grad) s.full.register_post_accumulate_grad_hook([this, i](const Tensor&) { on_grad_ready(i); });
  return original;
}

void FlatParamUnit::install_forward_hooks() {
  pre_hook_ = module_.register_forward_pre_hook([this](nn::Module&, const nn::Args& args) -> std::optional<nn::Args> {
    pre_forward();
    return cast_root_inputs(args);
  });
  post_hook_ = module_.register_forward_hook(
      [this](nn::Module&, const nn::Args&, const nn::Value& out) -> std::optional<nn::Value> {
        return post_forward(out);
      });
}

std::optional<nn::Args> FlatParamUnit::cast_root_inputs(const nn::Args& args) const {
  // The root casts floating-point inputs (in any argument, at any depth) to the compute dtype.
  const auto& mp = tree_->options.mixed_precision;
  if (!is_root() || !mp || !mp->param_dtype) return std::nullopt;
  const ScalarType dtype = *mp->param_dtype;
  auto needs_cast = [dtype](const Tensor& t) { return t.defined() && is_floating_point(t.dtype()) && t.dtype() != dtype; };
  bool any = false;
  nn::for_each_tensor(args, [&](const Tensor& t) { any |= needs_cast(t); });
  if (!any) return std::nullopt;
  return nn::map_tensors(args, [&](const Tensor& t) { return needs_cast(t) ? t.to(dtype) : t; });
}

FlatParamUnit::~FlatParamUnit() {
  if (gather_work_) gather_work_->wait();
  if (reduce_work_) reduce_work_->wait();
  if (replica_work_) replica_work_->wait();
  if (reached_work_) reached_work_->wait();
  for (const ParamSlot& s : params_) autograd::set_grad_buffer(s.full, Tensor());
  module_.remove_hook(pre_hook_);
  module_.remove_hook(post_hook_);
}

void FlatParamUnit::gather_async() {
  if (!plan_.flat_shards() || params_.empty() || state_ == State::Gathering) return;
  if (state_ == State::Gathered && !shards_changed()) return;
  if (!plan_.full_params_persist)
    full_flat_.storage()->reallocate(static_cast<size_t>(layout_.full_numel()) * element_size(compute_dtype_));
  if (compute_dtype_ == dtype_) {
    send_ = shard_flat_;
  } else {
    AddElapsed t(tree_->stats.copy_seconds);
    send_ = shard_flat_.to(compute_dtype_);
    tree_->stats.copied_bytes += send_.nbytes();
  }
  ++tree_->stats.all_gathers;
  tree_->stats.gathered_bytes += full_flat_.nbytes();
  dist::CollectiveLabel label("unit '" + name_ + "' parameters");
  gather_work_ = plan_.shard_group->all_gather_pieces_async(full_flat_, send_, layout_.pieces());
  gathered_version_ = shard_flat_.storage()->version();
  state_ = State::Gathering;
}

void FlatParamUnit::use_full_params() {
  gather_async();
  shard_read_ahead_ = false;
  if (state_ == State::Gathering) {
    {
      AddElapsed t(tree_->stats.gather_wait_seconds);
      gather_work_->wait();
    }
    gather_work_.reset();
    send_ = Tensor();
    state_ = State::Gathered;
    // Offload: in forward this unit's shard is idle until its backward (the last units' shards,
    // within the read-ahead budget, are kept: backward starts with them); in backward the
    // optimizer step needs it next.
    if (tree_->tier && !in_backward_ && !nn::in_recomputation() && !needed_early_in_backward())
      tree_->tier->evict(shard_flat_);
  }
  in_use();
  if (plan_.flat_shards())
    for (ParamSlot& s : params_) s.show(s.full);
}

bool FlatParamUnit::params_in_place(const nn::Module& owner) {
  if (!plan_.flat_shards() || params_.empty()) return true;
  if (state_ == State::Gathering && plan_.full_params_persist) use_full_params();  // no new collective
  if (state_ != State::Gathered) return false;
  for (const ParamSlot& s : params_)
    if (s.held_by(owner) && s.owner->param(s.name).impl_ptr() == s.shard.impl_ptr()) return false;
  return true;
}

void FlatParamUnit::use_shards() {
  if (plan_.flat_shards() || compute_dtype_ != dtype_)
    for (ParamSlot& s : params_) s.show(s.shard);
}

void FlatParamUnit::use_cast_params() {
  // Without flat buffers (NO_SHARD, DDP's buckets) the module computes with its own tensors; for
  // mixed precision it gets copies in the compute dtype, cast through autograd so gradients
  // arrive, in the parameter's dtype, at the parameter (whose hook reduces them).
  if (plan_.flat_shards() || compute_dtype_ == dtype_) return;
  AddElapsed t(tree_->stats.copy_seconds);
  for (ParamSlot& s : params_) {
    Tensor cast = s.full.to(compute_dtype_);
    tree_->stats.copied_bytes += cast.nbytes();
    s.show(cast);
  }
}

void FlatParamUnit::reshard() {
  if (!plan_.gathers_on_demand() || params_.empty() || state_ == State::Sharded) return;
  if (gather_work_) gather_work_->wait();
  gather_work_.reset();
  send_ = Tensor();
  in_use();  // no longer ahead of use either
  full_flat_.storage()->release();
  state_ = State::Sharded;
}

void FlatParamUnit::refresh_full_params() {
  if (plan_.gathers_after_step()) gather_async();
}

Tensor FlatParamUnit::gather_full(size_t i, const Tensor& value) const {
  const ParamSlot& s = params_[i];
  STRIDER_CHECK(value.sizes() == s.shard.sizes(), "FullyShardedDataParallel", "a tensor of shape ", value.sizes(),
                " cannot be unsharded as parameter '", s.full_name, "', whose local shard has shape ", s.shard.sizes());
  if (!plan_.flat_shards() || plan_.shards() == 1) return value.contiguous().clone();
  const int n = plan_.shards();
  Tensor mine = value.contiguous().reshape({value.numel()});
  Tensor all = empty({mine.numel() * n}, value.dtype());
  {
    dist::CollectiveLabel label("unsharding '" + s.full_name + "'");
    plan_.shard_group->all_gather(all, mine);
  }
  DimVector sizes = layout_[i].sizes;
  sizes[0] = layout_[i].chunk_rows * n;
  return all.reshape(sizes).narrow(0, 0, layout_[i].rows).contiguous();
}

void FlatParamUnit::in_use() {
  if (!prefetched_) return;
  prefetched_ = false;
  --tree_->prefetched;
}

void FlatParamUnit::prefetch(int direction) {
  if (!tree_->order_recorded) return;
  auto& order = tree_->forward_order;
  auto it = std::find(order.begin(), order.end(), this);
  if (it == order.end()) return;
  // Backward runs the root's own part first (it comes first in forward, and its output's gradient
  // arrives first), then the units in reverse: the root's next is the last unit of forward.
  std::ptrdiff_t from = (it - order.begin()) + direction;
  if (direction < 0 && is_root()) from = static_cast<std::ptrdiff_t>(order.size()) - 1;
  // The next limit_all_gathers units that gather on demand (units that keep their parameters have
  // nothing to fetch): those not yet on their way start, while fewer than that many are ahead.
  int window = tree_->options.limit_all_gathers;
  for (auto j = from; j >= 0 && j < static_cast<std::ptrdiff_t>(order.size()) && window > 0; j += direction) {
    FlatParamUnit* next = order[static_cast<size_t>(j)];
    if (next == this || !next->plan_.gathers_on_demand() || next->params_.empty()) continue;
    --window;
    if (next->state_ != State::Sharded) continue;  // already gathering or gathered
    if (tree_->prefetched >= tree_->options.limit_all_gathers) return;
    next->gather_async();
    next->prefetched_ = true;
    ++tree_->prefetched;
    ++tree_->stats.prefetched_gathers;
    tree_->stats.most_prefetched = std::max<int64_t>(tree_->stats.most_prefetched, tree_->prefetched);
  }
}

bool FlatParamUnit::needed_early_in_backward() const {
  if (!tree_->order_recorded) return false;
  const auto& order = tree_->forward_order;
  auto it = std::find(order.begin(), order.end(), this);
  if (it == order.end()) return false;
  int64_t from_here_on = 0;  // shard bytes of this unit and those after it in forward
  for (; it != order.end(); ++it) from_here_on += (*it)->shard_flat_.nbytes();
  return from_here_on <= tree_->options.cpu_offload.read_ahead_bytes;
}

void FlatParamUnit::read_ahead_shards(int direction) {
  if (!tree_->tier || !tree_->order_recorded || nn::in_recomputation()) return;
  auto& order = tree_->forward_order;
  auto it = std::find(order.begin(), order.end(), this);
  if (it == order.end()) return;
  // An optimizer stepping in backward updates each unit a little after its backward: its state
  // is read after the shards the next gathers need, this unit's first.
  const OptimizerInBackward* stepper = direction < 0 ? tree_->optimizer_in_backward.get() : nullptr;
  int64_t bytes = 0;
  auto read_state = [&](FlatParamUnit& u) {
    if (!stepper) return;
    // State already on its way counts against the budget as well (so does fsdp::memory_formula).
    for (const void* block : stepper->state_blocks(u)) {
      if (!u.state_read_ahead_) tree_->tier->prefetch(block);
      bytes += tree_->tier->block_bytes(block);
    }
    u.state_read_ahead_ = true;
  };
  read_state(*this);
  // Shard requests go to the front of the reader's queue, nearest unit last, so it is read first.
  std::vector<FlatParamUnit*> ahead;
  for (auto j = (it - order.begin()) + direction; j >= 0 && j < static_cast<std::ptrdiff_t>(order.size());
       j += direction) {
    FlatParamUnit* next = order[static_cast<size_t>(j)];
    if (!next->plan_.gathers_on_demand() || next->params_.empty() || next->state_ != State::Sharded) continue;
    if (bytes >= tree_->options.cpu_offload.read_ahead_bytes) break;
    bytes += next->shard_flat_.nbytes();
    if (!next->shard_read_ahead_) ahead.push_back(next);
    read_state(*next);
  }
  for (auto u = ahead.rbegin(); u != ahead.rend(); ++u) {
    tree_->tier->prefetch((*u)->shard_flat_, /*urgent=*/true);
    (*u)->shard_read_ahead_ = true;
  }
}

void FlatParamUnit::pre_forward() {
  if (is_root() && module_.is_training()) {  // named in messages, by the hybrid groups' collectives too
    const int64_t step = tree_->pg->step() + 1;
    tree_->pg->set_step(step);
    for (const auto& g : {tree_->groups->made_hybrid().shard, tree_->groups->made_hybrid().replica})
      if (g) g->set_step(step);
  }
  if (is_root() && tree_->tier) {  // the optimizer step is over: page the sharded state out
    for (FlatParamUnit* u : tree_->units) u->release_consumed_grads();
    // A streamed step wrote each parameter's state back as it went.
    if (!tree_->step_stream || !tree_->step_stream->take_streamed()) tree_->tier->evict_all();
  }
  if (!tree_->order_recorded && std::find(tree_->forward_order.begin(), tree_->forward_order.end(), this) ==
                                    tree_->forward_order.end())
    tree_->forward_order.push_back(this);
  gather_async();
  in_use();  // before prefetching: this unit is no longer ahead of use, so the next one may be
  // A checkpointed unit's recomputation runs in backward, where the next unit forward has
  // already been used: prefetching it would gather it for nothing.
  if (tree_->options.forward_prefetch && !nn::in_recomputation()) prefetch(+1);
  read_ahead_shards(+1);
  use_full_params();
  use_cast_params();
}

nn::Value FlatParamUnit::post_forward(const nn::Value& output) {
  use_shards();
  if (is_root()) tree_->order_recorded = true;
  auto flows = [](const Tensor& t) { return autograd::GradMode::is_enabled() && t.defined() && t.requires_grad(); };
  std::vector<Tensor> outputs;
  nn::for_each_tensor(output, [&](const Tensor& t) {
    if (flows(t)) outputs.push_back(t);
  });
  // No gradient flows (evaluation): free at once. A checkpointed unit's first forward runs
  // without grad too, but its recomputation follows in backward: keep it as training would.
  if (outputs.empty() && !nn::in_checkpointed_forward()) {
    reshard();
    return output;
  }
  // The root keeps its parameters for backward, which starts with it (as PyTorch does); so does
  // a checkpointed unit's recomputation, whose backward follows at once: one gather for both.
  if (plan_.free_after_forward && !is_root() && !nn::in_recomputation()) reshard();
  if (outputs.empty()) return output;
  std::vector<Tensor> hooked;
  for (const Tensor& t : outputs) hooked.push_back(t.detach());
  autograd::record("FSDPPreBackward", outputs, hooked, [this](const std::vector<Tensor>& grads, const autograd::Node&) {
    pre_backward();
    return grads;
  });
  size_t next = 0;
  return nn::map_tensors(output, [&](const Tensor& t) { return flows(t) ? hooked[next++] : t; });
}

void FlatParamUnit::pre_backward() {
  if (is_root() && !tree_->callback_queued) {
    // Offload: read the state the optimizer step starts with while backward computes (all of it
    // when no optimizer was registered to stream the step; an optimizer stepping in backward
    // reads each unit's state along with the shards instead).
    if (tree_->tier) {
      if (tree_->step_stream) tree_->step_stream->read_ahead_first();
      else if (!tree_->optimizer_in_backward) tree_->tier->prefetch_all();
    }
    tree_->callback_queued = true;
    TreeState* tree = tree_;
    autograd::queue_callback([tree] {
      // Under offload the state stays resident for the optimizer step that follows; the next
      // forward pages it out.
      tree->reduces_in_flight.clear();
      for (FlatParamUnit* u : tree->units) u->finish_reduce_scatter();
      for (FlatParamUnit* u : tree->units) u->finish_backward();
      tree->reduces_in_flight.clear();  // all settled: none may count against the next backward's bound
      tree->callback_queued = false;
      ++tree->backwards_since_step;
      for (FlatParamUnit* u : tree->units) u->state_read_ahead_ = false;
      if (tree->optimizer_in_backward) tree->optimizer_in_backward->end_backward();
    });
  }
  in_backward_ = true;
  gather_async();
  in_use();
  if (tree_->options.backward_prefetch == BackwardPrefetch::BackwardPre) prefetch(-1);
  if (tree_->step_stream || tree_->optimizer_in_backward) read_ahead_shards(-1);
  use_full_params();
  use_shards();  // backward reads the saved (full) tensors; the registry shows shards
}

bool FlatParamUnit::accumulating() const {
  return std::any_of(params_.begin(), params_.end(), [](const ParamSlot& s) { return s.shard.grad().defined(); });
}

Tensor FlatParamUnit::offload_grad_buffer() {
  // A new buffer if someone kept last step's gradients (they must not change under them).
  if (!offload_grads_.defined() || offload_grads_.storage().use_count() > 1)
    offload_grads_ = flat_tensor(layout_.shard_numel(), dtype_, GradientScratch::of_process());
  return offload_grads_;
}

void FlatParamUnit::release_consumed_grads() {
  // Any other holder (a shard's .grad, a user's reference) still needs the values.
  if (!offload_grads_.defined() || offload_grads_.storage().use_count() > 1) return;
  GradientScratch::of_process().release(offload_grads_);
}

ScalarType FlatParamUnit::grad_dtype() const { return plan_.flat_shards() ? compute_dtype_ : dtype_; }

Tensor FlatParamUnit::grad_view(size_t i) const {
  return grad_flat_.as_strided(layout_[i].sizes, params_[i].strides, grad_flat_.storage_offset() + layout_[i].full_offset);
}

void FlatParamUnit::prepare_grad_buffer() {
  if (!grad_flat_.defined()) {
    grad_flat_ = flat_tensor(layout_.full_numel(), grad_dtype(), cpu_allocator());
    for (const FlatParam& at : layout_.params())  // padding rows reduce as zeros
      if (at.chunk_numel() * at.ranks > at.numel())
        ops::zero_(grad_flat_.narrow(0, at.full_offset + at.numel(), at.chunk_numel() * at.ranks - at.numel()));
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].requires_grad && !autograd::grad_buffer(params_[i].full).defined())
      autograd::set_grad_buffer(params_[i].full, grad_view(i));
}

void FlatParamUnit::take_grad_in_place(size_t i) {
  ParamSlot& s = params_[i];
  // The buffer is made when the unit's first gradient arrives (as a wire would be), so that one
  // is copied in; the others accumulate there directly.
  prepare_grad_buffer();
  const Tensor& buffer = autograd::grad_buffer(s.full);
  if (s.full.grad().is_same(buffer)) return;
  {
    AddElapsed t(tree_->stats.copy_seconds);
    tree_->stats.copied_bytes += s.full.grad().nbytes();
    ops::copy_(buffer, s.full.grad());
  }
  s.full.set_grad(buffer);  // under no_sync, later micro-batches add into it
}

void FlatParamUnit::pack_grad(size_t i) {
  ParamSlot& s = params_[i];
  const Tensor& g = s.full.grad();
  const int n = plan_.shards();
  if (!grad_flat_.defined()) grad_flat_ = codec_->new_wire(n);
  STRIDER_INTERNAL_ASSERT(g.strides() == s.full.strides(), "gradient layout differs from its parameter's");
  const int64_t total = s.full.numel();
  Tensor g_flat = g.as_strided({total}, {1}, g.storage_offset());
  AddElapsed t(tree_->stats.copy_seconds);
  tree_->stats.copied_bytes += total * static_cast<int64_t>(element_size(grad_flat_.dtype()));
  const FlatParam& at = layout_[i];
  for (int q = 0; q < n; ++q) {
    const int64_t valid = at.valid_numel(q);
    codec_->encode(grad_flat_, q, at.shard_offset, valid > 0 ? g_flat.narrow(0, q * at.chunk_numel(), valid) : Tensor(),
                   at.chunk_numel());
  }
}

void FlatParamUnit::on_grad_ready(size_t i) {
  ParamSlot& s = params_[i];
  if (!s.full.grad().defined()) return;
  STRIDER_CHECK(!reduced_this_backward_, "FullyShardedDataParallel", "a gradient of parameter '", s.full_name,
                "' arrived after unit '", name_, "' reduced its gradients in this backward: the parameter's "
                "gradient comes in parts from separate backward passes (it is used both inside and outside an "
                "activation checkpoint, or in two checkpointed regions), so the reduction would miss a part. "
                "Checkpoint every use of it together, or none");
  if (grads_in_place_) take_grad_in_place(i);
  if (tree_->no_sync) {  // gradients keep accumulating (in the buffer, or in the gathered parameters)
    accumulated_[i] = 1;
    return;
  }
  if (reduce_at_end_) {  // the same: the end of backward hands them over (finish_reduce_scatter)
    grad_seen_[i] = 1;
    return;
  }
  hand_over_grad(i);
  if (!grad_seen_[i]) {
    grad_seen_[i] = 1;
    if (++grads_ready_ == grads_expected_ && !reduce_at_end_) launch_reduce();
  }
}

void FlatParamUnit::hand_over_grad(size_t i) {
  ParamSlot& s = params_[i];
  if (grads_in_place_) autograd::set_grad_buffer(s.full, Tensor());
  else pack_grad(i);
  s.full.set_grad(Tensor());
}

Tensor FlatParamUnit::gradient_buffer(ScalarType dtype, int64_t numel) {
  // Offload: reduce straight into the reused gradient buffer (a second gradient-sized buffer
  // per unit would be alive until the end of backward).
  if (tree_->tier && plan_.flat_shards() && dtype == dtype_ && numel == layout_.shard_numel() && !accumulating())
    return offload_grad_buffer();
  return flat_tensor(numel, dtype, cpu_allocator());
}

void FlatParamUnit::release_grad_buffer() {
  for (size_t i = 0; i < params_.size(); ++i) {
    ParamSlot& s = params_[i];
    // A parameter this backward did not reach: zero, unless no_sync micro-batches left it a
    // gradient in the buffer, or it holds one from an earlier backward (NoShard's parameters
    // are the module's own): that one travels, so a rank that did reach it adds to it.
    const bool in_buffer = s.requires_grad && s.full.grad().defined() &&
                           s.full.grad().is_same(autograd::grad_buffer(s.full));
    if (!grad_seen_[i] && !in_buffer) {
      if (s.requires_grad && s.full.grad().defined())
        ops::copy_(grad_view(i), s.full.grad());
      else
        ops::zero_(grad_view(i));
    }
    if (!s.requires_grad) continue;
    autograd::set_grad_buffer(s.full, Tensor());
    if (in_buffer) s.full.set_grad(Tensor());
  }
}

void FlatParamUnit::launch_reached() {
  reached_ = zeros({static_cast<int64_t>(params_.size())}, kFloat);
  float* mask = reached_.data_ptr<float>();
  for (size_t i = 0; i < params_.size(); ++i)
    mask[i] = params_[i].requires_grad && (grad_seen_[i] || accumulated_[i]) ? 1.0f : 0.0f;
  dist::CollectiveLabel label("unit '" + name_ + "' parameters reached");
  reached_work_ = tree_->groups->world()->all_reduce_async(reached_, dist::ReduceOp::Max);
}

void FlatParamUnit::launch_reduce() {
  const int n = plan_.shards();
  launch_reached();
  if (grads_in_place_) {
    if (!grad_flat_.defined()) prepare_grad_buffer();  // no gradient came
    release_grad_buffer();  // the buffer is the collective's until it is done
  } else {
    if (!grad_flat_.defined()) grad_flat_ = codec_->new_wire(n);
    for (size_t i = 0; i < params_.size(); ++i) {
      if (grad_seen_[i]) continue;
      // Not reached by this backward but holding a gradient (no_sync micro-batches', or NoShard's
      // from an earlier backward): it travels, as in release_grad_buffer.
      if (params_[i].requires_grad && params_[i].full.grad().defined()) {
        pack_grad(i);
        if (accumulated_[i]) params_[i].full.set_grad(Tensor());  // the shard receives it
        continue;
      }
      for (int q = 0; q < n; ++q)  // not reached here: zeros
        codec_->encode(grad_flat_, q, layout_[i].shard_offset, Tensor(), layout_[i].chunk_numel());
    }
  }
  ++tree_->stats.reduce_scatters;
  tree_->stats.reduced_bytes += grad_flat_.nbytes();
  dist::CollectiveLabel label("unit '" + name_ + "' gradients");
  const auto allocate = [this](ScalarType t, int64_t numel) { return gradient_buffer(t, numel); };
  const bool flat = plan_.flat_shards();
  dist::ProcessGroup* group = flat ? plan_.shard_group.get() : plan_.replica_group.get();
  std::tie(reduce_work_, reduced_) = grads_in_place_
                                         ? codec_->reduce_in_place(group, grad_flat_, layout_.pieces(), !flat, allocate)
                                         : codec_->reduce(group, grad_flat_, !flat, allocate);
  reduce_launched_ = true;
  reduced_this_backward_ = true;
  settled_ = false;
  replica_launched_ = false;  // this reduction's all-reduce across replicas is still to come
  grads_ready_ = 0;
  std::fill(grad_seen_.begin(), grad_seen_.end(), 0);
  std::fill(accumulated_.begin(), accumulated_.end(), 0);
  if (flat) reshard();  // every node that used the full parameters has run
  if (flat || codec_->settles_early()) {
    // The collective holds the wire until it finishes (reduced_ may be the wire itself);
    // dropping ours frees it right then.
    grad_flat_ = Tensor();
    auto& in_flight = tree_->reduces_in_flight;
    in_flight.push_back(this);
    while (in_flight.size() > tree_->max_reduces_in_flight()) {
      in_flight.front()->settle_reduce();
      in_flight.pop_front();
    }
  }
}

void FlatParamUnit::settle_reduce() {
  if (settled_ || !reduce_launched_) return;
  {
    AddElapsed t(tree_->stats.reduce_wait_seconds);
    if (reduce_work_) reduce_work_->wait();
  }
  reduce_work_.reset();
  grad_flat_ = Tensor();  // reduced_ holds the wire when it is what arrived
  {
    AddElapsed t(tree_->stats.copy_seconds);
    reduced_ = codec_->settle(std::move(reduced_));
  }
  settled_ = true;
  // Hybrid: the chunk goes across the replicas (other hosts) now, while later units compute,
  // not at the end of backward (which left the link idle through backward).
  if (plan_.flat_shards() && plan_.replica_group) launch_replica_reduce();
  // An optimizer stepping in backward takes the gradients now, unless a reduction across
  // replicas is still to come (it waits for that at the end of backward).
  if (tree_->optimizer_in_backward && plan_.flat_shards() && !plan_.replica_group) {
    in_backward_ = false;  // its part of this backward is over: the end of backward must not reduce again
    deliver_gradients();
  }
}

void FlatParamUnit::launch_replica_reduce() {
  if (replica_launched_) return;
  dist::CollectiveLabel label("unit '" + name_ + "' gradients across replicas");
  replica_work_ = plan_.replica_group->all_reduce_async(reduced_, codec_->replica_op());
  replica_launched_ = true;
  ++tree_->stats.replica_all_reduces;
}

void FlatParamUnit::finish_reduce_scatter() {
  autograd::NoGradGuard no_grad;
  // Every rank launches every unit that took part in backward, gradients or not, so the
  // collectives match.
  if (in_backward_ && !tree_->no_sync && !reduce_launched_ && grads_expected_ > 0) {
    if (reduce_at_end_)
      for (size_t i = 0; i < params_.size(); ++i)
        if (grad_seen_[i] && params_[i].full.grad().defined()) hand_over_grad(i);
    launch_reduce();
  }
  in_backward_ = false;
  if (!reduce_launched_ || !plan_.flat_shards() || !plan_.replica_group) return;
  // Hybrid: the shard group's reduction, reduced again across the replicas holding this shard
  // (launched here when no later unit's launch settled it during backward).
  settle_reduce();
  launch_replica_reduce();
}

void FlatParamUnit::finish_backward() {
  autograd::NoGradGuard no_grad;
  if (reduce_launched_) {
    settle_reduce();
    deliver_gradients();
  }
  reduced_this_backward_ = false;
  reshard();
}

void FlatParamUnit::deliver_gradients() {
  if (!reduce_launched_) return;  // delivered already (or nothing was reduced)
  autograd::NoGradGuard no_grad;
  reduce_launched_ = false;
  settled_ = false;
  {
    AddElapsed t(tree_->stats.reduce_wait_seconds);
    if (replica_work_) replica_work_->wait();
  }
  replica_work_.reset();
  replica_launched_ = false;
  grad_flat_ = Tensor();
  Tensor g;
  {
    AddElapsed t(tree_->stats.copy_seconds);
    g = codec_->decode(reduced_, dtype_, [this](ScalarType t, int64_t numel) { return gradient_buffer(t, numel); });
    if (g.defined() && !g.is_same(reduced_)) tree_->stats.copied_bytes += g.nbytes();
  }
  reduced_ = Tensor();
  if (reached_work_) {
    AddElapsed t(tree_->stats.reduce_wait_seconds);
    reached_work_->wait();
    reached_work_.reset();
    const float* mask = reached_.data_ptr<float>();
    for (size_t i = 0; i < params_.size(); ++i) reached_anywhere_[i] |= mask[i] > 0.0f;
    reached_ = Tensor();
  }
  if (!g.defined()) return;  // deterministic mode: micro-batches of this step are still to come
  std::vector<char> reached(params_.size(), 0);
  reached.swap(reached_anywhere_);
  for (size_t i = 0; i < params_.size(); ++i) {
    ParamSlot& s = params_[i];
    // No rank's backward reached it: its gradient stays as it was (none after zero_grad), so the
    // optimizer leaves it alone as it would in one process.
    if (!s.requires_grad || !reached[i]) continue;
    Tensor view = g.as_strided(s.shard.sizes(), s.shard.strides(), layout_[i].shard_offset);
    // Sharded gradients accumulate across backwards without zero_grad; NoShard's own tensors
    // already carried the earlier gradient into this reduction.
    if (plan_.flat_shards() && s.shard.grad().defined())
      ops::add_(s.shard.grad(), view);
    else
      s.shard.set_grad(view);
  }
  g = Tensor();
  if (!tree_->optimizer_in_backward) return;
  tree_->optimizer_in_backward->update(*this);
  if (!tree_->tier) return;
  // Offload: this step is done with the shard and its state; out they go while others compute.
  release_consumed_grads();
  if (plan_.flat_shards()) tree_->tier->evict(shard_flat_);
  for (const void* block : tree_->optimizer_in_backward->state_blocks(*this)) tree_->tier->evict(block);
}

}  // namespace strider::fsdp::detail
