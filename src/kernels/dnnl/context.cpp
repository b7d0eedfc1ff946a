#include "kernels/dnnl/context.h"

#include <vector>

#include "core/make_tensor.h"
#include "kernels/cpu_isa.h"
#include "strider/core/context.h"
#include "strider/core/error.h"
#include "strider/core/layout.h"

namespace strider::kernels::dnnl_ops {

namespace {

dnnl::cpu_isa onednn_isa(Isa isa) {
  switch (isa) {
    case Isa::baseline: return dnnl::cpu_isa::sse41;
    case Isa::avx2: return dnnl::cpu_isa::avx2;
    case Isa::avx512: return dnnl::cpu_isa::avx512_core;
    case Isa::avx512_bf16: return dnnl::cpu_isa::avx512_core_bf16;
    case Isa::amx_bf16: break;
  }
  return dnnl::cpu_isa::all;
}

// oneDNN's ISA cap only holds when set before its first kernel, so the engine (which every
// primitive needs) applies STRIDER_MAX_CPU_ISA as it is created.
dnnl::engine capped_engine() {
  if (cpu_isa() < detected_cpu_isa()) dnnl::set_max_cpu_isa(onednn_isa(cpu_isa()));
  return dnnl::engine(dnnl::engine::kind::cpu, 0);
}

struct EngineSlot {
  dnnl::engine engine = capped_engine();
};

// oneDNN's ISA flags are bit sets: a level includes every flag of the levels below it.
bool onednn_has(dnnl::cpu_isa level) {
  engine();  // the cap first: reading the effective ISA fixes it
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (effective & static_cast<unsigned>(level)) == static_cast<unsigned>(level);
}

}  // namespace

dnnl::engine& engine() { return Context::process().slot<EngineSlot>().engine; }

dnnl::stream& stream() {
  // One stream per thread: a stream is not meant to be shared by threads submitting work.
  thread_local dnnl::stream s(engine());
  return s;
}

bool supports(ScalarType t) {
  static const bool bf16 = onednn_has(dnnl::cpu_isa::avx512_core);
  return t == kFloat || (t == kBFloat16 && bf16);
}

bool fast_plain_layout_float32() {
  static const bool fast = onednn_has(dnnl::cpu_isa::avx512_core);
  return fast;
}

std::string isa_in_use() {
  if (onednn_has(dnnl::cpu_isa::avx512_core_amx)) return "amx_bf16";
  if (onednn_has(dnnl::cpu_isa::avx512_core_bf16)) return "avx512_bf16";
  if (onednn_has(dnnl::cpu_isa::avx512_core)) return "avx512";
  if (onednn_has(dnnl::cpu_isa::avx2)) return "avx2";
  return "baseline";
}

std::string rejects_dtype(ScalarType t) {
  if (supports(t)) return "";
  if (t == kBFloat16)
    return strider::detail::str("oneDNN has no bfloat16 kernels for this CPU's instruction set (", isa_in_use(),
                                "; they need AVX-512)");
  return strider::detail::str("oneDNN computes float32 and bfloat16, not ", t);
}

std::string rejects_layouts(const char* what, std::initializer_list<const Tensor*> tensors) {
  const Tensor& first = **tensors.begin();
  for (const Tensor* t : tensors)
    if (t->strides() != first.strides())
      return strider::detail::str(what, " have different strides (", first.strides(), " and ", t->strides(),
                                  "); this primitive reads them with one descriptor");
  return "";
}

dnnl::memory::data_type data_type(ScalarType t) {
  switch (t) {
    case kFloat: return dnnl::memory::data_type::f32;
    case kBFloat16: return dnnl::memory::data_type::bf16;
    case kHalf: return dnnl::memory::data_type::f16;
    case kInt: return dnnl::memory::data_type::s32;
    case kByte: return dnnl::memory::data_type::u8;
    default: break;
  }
  STRIDER_CHECK(false, "onednn", "dtype ", t, " has no oneDNN equivalent");
  return dnnl::memory::data_type::undef;
}

dnnl::memory::dims dims_of(IntArrayRef v) { return dnnl::memory::dims(v.begin(), v.end()); }

dnnl::memory::desc desc_of(IntArrayRef sizes, IntArrayRef strides, ScalarType t) {
  return dnnl::memory::desc(dims_of(sizes), data_type(t), dims_of(strides));
}

dnnl::memory::desc desc_of(const Tensor& t) { return desc_of(t.sizes(), t.strides(), t.dtype()); }

dnnl::memory memory_of(const dnnl::memory::desc& d, const Tensor& t) {
  return dnnl::memory(d, engine(), t.data());
}

dnnl::memory memory_of(const Tensor& t) { return memory_of(desc_of(t), t); }

const dnnl::primitive_attr& attr() {
  static const dnnl::primitive_attr a = [] {
    dnnl::primitive_attr made;
    made.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return made;
  }();
  return a;
}

namespace {
thread_local int64_t t_last_scratchpad = 0;
}  // namespace

void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args) {
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  const int64_t bytes = md ? static_cast<int64_t>(dnnl_memory_desc_get_size(md)) : 0;
  Tensor scratchpad;
  if (bytes > 0) {
    scratchpad = scratch_bytes(bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(dnnl::memory::desc(*md), engine(), scratchpad.data()));
  }
  t_last_scratchpad = bytes;
  try {
    prim.execute(stream(), args);
    stream().wait();
  } catch (const dnnl::error& e) {
    STRIDER_CHECK(false, "onednn", "a primitive failed while running on this CPU (", isa_in_use(), "): ", e.what(),
                  "; rerun with set_kernel_verbose(true) (STRIDER_VERBOSE=1 with the strider tools) to see which op, and "
                  "report it with that log");
  }
}


dnnl::memory allocate(const dnnl::memory::desc& d, Tensor& keep) {
  keep = scratch_bytes(static_cast<int64_t>(d.get_size()));
  return dnnl::memory(d, engine(), keep.data());
}

std::optional<cpu::BlockedPanels> blocked_panels_of(const dnnl::memory::desc& want) {
  const dnnl_memory_desc_t& d = want.data;
  if (d.ndims != 2 || d.format_kind != dnnl_blocked || d.offset0 != 0 || d.padded_offsets[0] != 0 ||
      d.padded_offsets[1] != 0)
    return std::nullopt;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  cpu::BlockedPanels p;
  p.rows = d.dims[0];
  p.cols = d.dims[1];
  if (d.data_type == dnnl_f32 && b.inner_nblks == 2 && b.inner_idxs[0] == 0 && b.inner_idxs[1] == 1) {
    p.row_block = b.inner_blks[0];
    p.element_size = 4;
  } else if (d.data_type == dnnl_bf16 && b.inner_nblks == 3 && b.inner_idxs[0] == 0 && b.inner_idxs[1] == 1 &&
             b.inner_idxs[2] == 0 && b.inner_blks[2] == 2) {
    p.row_block = b.inner_blks[0] * 2;
    p.element_size = 2;
  } else {
    return std::nullopt;
  }
  p.col_block = b.inner_blks[1];
  p.row_block_stride = b.strides[0];
  p.col_block_stride = b.strides[1];
  if (p.row_block <= 0 || p.col_block <= 0) return std::nullopt;
  const int64_t padded_rows = (p.rows + p.row_block - 1) / p.row_block * p.row_block;
  const int64_t padded_cols = (p.cols + p.col_block - 1) / p.col_block * p.col_block;
  if (d.padded_dims[0] != padded_rows || d.padded_dims[1] != padded_cols ||
      want.get_size() != static_cast<size_t>(padded_rows * padded_cols * p.element_size))
    return std::nullopt;
  return p;
}

void reorder_into(const dnnl::memory& src, const dnnl::memory& dst) {
  auto pd = created_or_declined("a reorder", [&] {
    return dnnl::reorder::primitive_desc(engine(), src.get_desc(), engine(), dst.get_desc(), attr());
  });
  execute(dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
}

namespace {

struct CachedWeights {
  std::weak_ptr<StorageImpl> storage;
  int64_t offset = 0;
  uint64_t generation = 0;
  dnnl::memory::desc user, want;
  Tensor bytes;  // the reordered copy's memory, from strider's allocator
  dnnl::memory memory;
};

struct WeightCache {
  std::mutex mu;
  std::vector<CachedWeights> entries;
  int64_t bytes = 0;
  // empty_cache(): every copy goes; the next use of each weight reorders it again.
  void release() {
    std::vector<CachedWeights> dropped;
    {
      std::lock_guard<std::mutex> lock(mu);
      dropped.swap(entries);
      bytes = 0;
    }
  }
};

WeightCache& weight_cache() { return Context::process().slot<WeightCache>(); }

// Copies whose weight died or was written since: the weight's next use reorders again.
void drop_stale(WeightCache& c) {
  std::erase_if(c.entries, [&](const CachedWeights& e) {
    auto s = e.storage.lock();
    const bool stale = !s || s->generation() != e.generation;
    if (stale) c.bytes -= e.bytes.nbytes();
    return stale;
  });
}

}  // namespace

dnnl::memory weights_in(const Tensor& weight, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                        Tensor& keep_alive) {
  dnnl::memory src = memory_of(user, weight);
  if (user == want) return src;
  WeightCache& c = weight_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  drop_stale(c);
  const StorageImpl* storage = weight.storage().get();
  for (const CachedWeights& e : c.entries)
    if (e.storage.lock().get() == storage && e.offset == weight.storage_offset() && e.user == user && e.want == want) {
      keep_alive = e.bytes;
      return e.memory;
    }
  CachedWeights e{weight.storage(), weight.storage_offset(), weight.storage()->generation(), user, want, Tensor(), {}};
  e.bytes = make_tensor({static_cast<int64_t>(want.get_size())}, {1}, kByte);
  e.memory = dnnl::memory(want, engine(), e.bytes.data());
  reorder_into(src, e.memory);
  c.bytes += e.bytes.nbytes();
  keep_alive = e.bytes;
  c.entries.push_back(std::move(e));
  return c.entries.back().memory;
}

int64_t cached_weight_bytes() {
  WeightCache& c = weight_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  drop_stale(c);
  return c.bytes;
}

KeyBuilder& KeyBuilder::add(IntArrayRef v) {
  key_ += '[';
  for (int64_t x : v) {
    key_ += std::to_string(x);
    key_ += ',';
  }
  key_ += ']';
  return *this;
}

KeyBuilder& KeyBuilder::add(int64_t v) {
  key_ += '|';
  key_ += std::to_string(v);
  return *this;
}

KeyBuilder& KeyBuilder::add(const Tensor& t) {
  if (!t.defined()) {
    key_ += "<none>";
    return *this;
  }
  add(t.sizes());
  add(t.strides());
  return add(static_cast<int64_t>(t.dtype()));
}

}  // namespace strider::kernels::dnnl_ops

namespace strider::kernels {
int64_t last_onednn_scratchpad_bytes() { return dnnl_ops::t_last_scratchpad; }
}  // namespace strider::kernels
