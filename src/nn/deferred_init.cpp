#include "strider/nn/deferred_init.h"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/make_tensor.h"
#include "strider/autograd/grad_mode.h"
#include "strider/core/allocator.h"
#include "strider/core/context.h"
#include "strider/core/counter_rng.h"
#include "strider/core/error.h"
#include "strider/core/layout.h"
#include "strider/nn/module.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/view.h"
#include "init_math.h"

namespace strider::nn {
namespace {

constexpr const char* kOp = "deferred init";
constexpr int64_t kChunkElements = int64_t{1} << 16;  // drawn (as float64) per piece: 512 KiB

thread_local std::optional<uint64_t> t_seed;

struct Entry {
  std::weak_ptr<StorageImpl> storage;
  uint64_t seed = 0;
  deferred::InitRecipe recipe;
  DimVector sizes;  // the stand-in's, which its views share the storage of
};

// Stand-ins by storage: views of a stand-in (detach, requires_grad_) share it.
class Registry {
 public:
  void add(const Storage& s, uint64_t seed, deferred::InitRecipe recipe, IntArrayRef sizes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= 2 * swept_size_ + 64) sweep();
    entries_[s.get()] = Entry{s, seed, std::move(recipe), sizes.vec()};
  }
  std::optional<Entry> find(const Tensor& t) {
    if (!t.defined()) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(t.storage().get());
    if (it == entries_.end()) return std::nullopt;
    if (it->second.storage.lock() != t.storage()) {  // an old entry whose address was reused
      entries_.erase(it);
      return std::nullopt;
    }
    return it->second;
  }
  void set_recipe(const Tensor& t, deferred::InitRecipe recipe) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.at(t.storage().get()).recipe = std::move(recipe);
  }

 private:
  void sweep() {
    for (auto it = entries_.begin(); it != entries_.end();) it = it->second.storage.expired() ? entries_.erase(it) : ++it;
    swept_size_ = entries_.size();
  }
  std::mutex mu_;
  std::unordered_map<const StorageImpl*, Entry> entries_;
  size_t swept_size_ = 0;
};

// A Context slot: like the context, never destroyed, so it outlives every static tensor.
Registry& registry() { return Context::process().slot<Registry>(); }

Tensor make_stand_in(ScalarType dtype, IntArrayRef sizes, IntArrayRef strides, uint64_t seed, deferred::InitRecipe recipe) {
  auto storage = std::make_shared<StorageImpl>(0, cpu_allocator());
  storage->release();  // no memory until materialized
  registry().add(storage, seed, std::move(recipe), sizes);
  return make_tensor(std::move(storage), dtype, sizes.vec(), strides.vec(), 0);
}

Entry entry_of(const Tensor& t, const std::string& name) {
  auto e = registry().find(t);
  STRIDER_CHECK(e.has_value(), kOp, "parameter '", name, "' (", t.defined() ? t.sizes() : IntArrayRef{},
                ") is not a deferred stand-in; it already has memory");
  return *e;
}

int64_t rows_of(const Tensor& t) { return t.dim() == 0 ? 1 : t.size(0); }

// Rows [r0, r0 + dst rows) drawn into dst, in pieces of about kChunkElements.
void draw_rows(const Entry& e, const std::string& name, int64_t r0, const Tensor& dst, int64_t row_numel) {
  const deferred::InitRecipe& rc = e.recipe;
  const uint64_t key = counter_rng_key(e.seed, name);
  const int64_t rows = dst.dim() == 0 ? 1 : dst.size(0);
  const int64_t step = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(row_numel, 1));
  for (int64_t r = 0; r < rows; r += step) {
    const int64_t k = std::min(step, rows - r);
    Tensor piece = dst.dim() == 0 ? dst : dst.narrow(0, r, k);
    Tensor drawn = empty({k * row_numel}, kDouble);
    double* out = static_cast<double*>(drawn.data());
    const uint64_t first = static_cast<uint64_t>((r0 + r) * row_numel);
    const nn::init::detail::TruncNormal trunc{rc.a, rc.b, rc.lo, rc.hi};
    for (int64_t j = 0; j < k * row_numel; ++j) {
      const uint64_t index = first + static_cast<uint64_t>(j);
      switch (rc.kind) {
        case deferred::InitRecipe::Kind::Uniform: out[j] = rc.a + (rc.b - rc.a) * counter_uniform(key, index); break;
        case deferred::InitRecipe::Kind::TruncNormal: out[j] = trunc.from_uniform(counter_uniform(key, index)); break;
        default: out[j] = rc.a + rc.b * counter_normal(key, index); break;
      }
    }
    ops::copy_(piece, drawn.to(rc.dtype).reshape(piece.sizes()));
  }
}

// An orthogonal matrix mixes every row into every other, so each materialization (of any
// rows) draws and decomposes the whole matrix and keeps its rows.
void copy_orthogonal_rows(const Entry& e, const std::string& name, const Tensor& t, int64_t row_begin, const Tensor& dst) {
  const uint64_t key = counter_rng_key(e.seed, name);
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  std::vector<double> normal(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < normal.size(); ++i) normal[i] = counter_normal(key, i);
  std::vector<double> q = nn::init::detail::orthogonal_from_normal(std::move(normal), rows, cols, e.recipe.a);
  Tensor whole = from_blob(q.data(), t.sizes(), kDouble);
  ops::copy_(dst, whole.narrow(0, row_begin, dst.size(0)).to(e.recipe.dtype));
}

}  // namespace

DeferredInit::DeferredInit(uint64_t seed) : outer_(t_seed) { t_seed = seed; }
DeferredInit::~DeferredInit() { t_seed = outer_; }

bool is_deferred(const Tensor& t) { return registry().find(t).has_value(); }

void materialize_rows(const Tensor& t, const std::string& name, int64_t row_begin, const Tensor& dst) {
  autograd::NoGradGuard no_grad;
  const Entry e = entry_of(t, name);
  const int64_t rows = rows_of(t);
  const int64_t k = dst.dim() == 0 ? 1 : dst.size(0);
  DimVector want = t.sizes().vec();
  if (!want.empty()) want[0] = k;
  STRIDER_CHECK(dst.sizes() == IntArrayRef(want) && row_begin >= 0 && row_begin + k <= rows, kOp, "parameter '", name,
                "' ", t.sizes(), ": cannot write rows [", row_begin, ", ", row_begin + k, ") into a tensor of shape ",
                dst.sizes());
  const int64_t row_numel = rows ? t.numel() / rows : 0;
  using Kind = deferred::InitRecipe::Kind;
  switch (e.recipe.kind) {
    case Kind::Value:
      ops::copy_(dst, t.dim() == 0 ? e.recipe.value : e.recipe.value.narrow(0, row_begin, k));
      return;
    case Kind::Constant:
      ops::copy_(dst, full({}, e.recipe.a, TensorOptions().dtype(e.recipe.dtype)).expand(dst.sizes()));
      return;
    case Kind::Uniform:
    case Kind::Normal:
    case Kind::TruncNormal:
      draw_rows(e, name, row_begin, dst, row_numel);
      return;
    case Kind::Orthogonal:
      copy_orthogonal_rows(e, name, t, row_begin, dst);
      return;
  }
}

Tensor materialize_tensor(const Tensor& t, const std::string& name) {
  Tensor out = make_tensor(t.sizes().vec(), t.strides().vec(), t.dtype());
  materialize_rows(t, name, 0, out);
  return out;
}

void materialize(Module& module) {
  // Names as module.named_parameters() gives them; a parameter shared by two modules is made once.
  std::unordered_map<const StorageImpl*, std::string> names;
  for (auto& [name, p] : module.named_parameters())
    if (is_deferred(p)) names.emplace(p.storage().get(), name);
  std::unordered_map<const StorageImpl*, Tensor> made;
  std::vector<std::pair<Tensor, std::string>> replaced;
  for (auto& [prefix, m] : module.named_modules())
    for (auto& [n, p] : m->named_parameters(/*recurse=*/false)) {
      auto it = names.find(p.storage().get());
      if (it == names.end()) continue;
      auto [slot, fresh] = made.try_emplace(it->first);
      if (fresh) {
        slot->second = materialize_tensor(p, it->second);
        if (p.requires_grad()) slot->second.requires_grad_(true);
        replaced.emplace_back(p, it->second);
      }
      m->set_param(n, slot->second);
    }
  // The module now holds new tensors: a stand-in kept from before (an optimizer built on the
  // deferred model) is named when used, as FSDP's wrap names the tensors it moves into shards,
  // instead of stepping a tensor nothing reads.
  for (auto& [stand_in, name] : replaced)
    stand_in.storage()->retire("its values are in the tensor nn::materialize made for parameter '" + name +
                               "', so a tensor taken from the module before materialize() no longer holds it. "
                               "Build the optimizer (and take parameters) from the module after materialize()");
}

namespace deferred {

std::optional<Tensor> defer_parameter(const Tensor& value) {
  if (!t_seed || !value.defined() || is_deferred(value)) return std::nullopt;
  const DimVector strides = value.is_non_overlapping_and_dense()
                                ? value.strides().vec()
                                : layout::strides_for_format(value.sizes(), MemoryFormat::Contiguous, kOp);
  return make_stand_in(value.dtype(), value.sizes(), strides, *t_seed,
                       InitRecipe{.kind = InitRecipe::Kind::Value, .dtype = value.dtype(), .value = value.detach()});
}

bool record_init(const Tensor& t, InitRecipe recipe) {
  auto e = registry().find(t);
  if (!e) return false;
  // One recipe draws the whole stand-in: an init of a part of it (an LSTM's gate rows) would
  // silently fill all of it.
  int64_t whole = 1;
  for (int64_t n : e->sizes) whole *= n;  // the stand-in's sizes were checked when it was made
  STRIDER_CHECK(t.numel() == whole && t.storage_offset() == 0, kOp, "an init of part of a deferred parameter (",
                t.sizes(), " of ", IntArrayRef(e->sizes), ") would set all of it: a stand-in records one init "
                "for the whole tensor. Initialize the whole parameter, or materialize the module first");
  // An orthogonal matrix depends on the shape it is drawn in: only the parameter's own.
  STRIDER_CHECK(recipe.kind != InitRecipe::Kind::Orthogonal || t.sizes() == IntArrayRef(e->sizes), kOp,
                "orthogonal_ of a deferred parameter seen as ", t.sizes(), " (it is ", IntArrayRef(e->sizes),
                "): the stand-in draws its matrix in its own shape. Call orthogonal_ on the parameter itself, or "
                "materialize the module first");
  recipe.dtype = t.dtype();
  registry().set_recipe(t, std::move(recipe));
  return true;
}

Tensor retarget(const Tensor& t, ScalarType dtype, std::optional<MemoryFormat> format) {
  auto e = registry().find(t);
  STRIDER_CHECK(e.has_value(), kOp, "internal: retarget of a tensor that is not a stand-in");
  if (e->recipe.kind == InitRecipe::Kind::Value) e->recipe.value = e->recipe.value.to(dtype);
  const DimVector strides = format ? layout::strides_for_format(t.sizes(), *format, "Module.to") : t.strides().vec();
  return make_stand_in(dtype, t.sizes(), strides, e->seed, e->recipe);
}

}  // namespace deferred
}  // namespace strider::nn
