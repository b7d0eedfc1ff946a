#pragma once
// oneDNN plumbing shared by the primitive wrappers: the CPU engine and stream, memory
// descriptors that describe a strider tensor exactly (dims and strides as they are), and a
// primitive cache keyed by everything that shapes a primitive.
#include <dnnl.hpp>

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "kernels/cpu/blocked_panels.h"
#include "kernels/implementation_list.h"
#include "kernels/scratch.h"
#include "strider/core/context.h"
#include "strider/core/tensor.h"

namespace strider::kernels::dnnl_ops {

dnnl::engine& engine();
dnnl::stream& stream();

// True when oneDNN computes in this dtype on this CPU: float32 always; bfloat16 from AVX-512 up
// (oneDNN 2.6 has no bfloat16 convolution, matmul, normalization or pooling below avx512_core;
// there the float32 detour runs it, kernels/float32_detour.h).
bool supports(ScalarType t);
// Why oneDNN cannot compute in this dtype; empty when it can (an implementation list's answer).
std::string rejects_dtype(ScalarType t);
// True when oneDNN has fast plain-layout (NCHW) float32 convolution and batch norm: from AVX-512
// up. Below it they are gemm-based or generic, and channels-last is 3x faster.
bool fast_plain_layout_float32();
// The instruction set oneDNN runs with (after STRIDER_MAX_CPU_ISA), for messages.
std::string isa_in_use();
// `make()` (which creates a oneDNN primitive or descriptor for the problem `key` describes), with
// oneDNN's failure turned into ImplementationDeclined naming the problem and the CPU's ISA, so the
// implementation list moves on instead of a oneDNN error reaching the user.
template <class Make>
auto created_or_declined(const std::string& key, Make&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const dnnl::error& e) {
    throw ImplementationDeclined(strider::detail::str("oneDNN could not create ", key, " on this CPU (", isa_in_use(),
                                                      "): ", e.what()));
  }
}
// Why tensors that one primitive describes with a single descriptor cannot go to it: their
// strides differ. Empty when they agree.
std::string rejects_layouts(const char* what, std::initializer_list<const Tensor*> tensors);
dnnl::memory::data_type data_type(ScalarType t);
dnnl::memory::dims dims_of(IntArrayRef v);
// Plain descriptor with the tensor's own strides.
dnnl::memory::desc desc_of(const Tensor& t);
dnnl::memory::desc desc_of(IntArrayRef sizes, IntArrayRef strides, ScalarType t);
dnnl::memory memory_of(const Tensor& t);
dnnl::memory memory_of(const dnnl::memory::desc& d, const Tensor& t);

// Every primitive is created with this attribute: a user-managed scratchpad, so the temporary
// memory a primitive needs comes from strider's allocator at each execution (memory_stats()
// counts it) instead of from oneDNN's own, invisible, allocations.
const dnnl::primitive_attr& attr();
// Runs `prim` with `args` plus a scratchpad of the size its descriptor asks for, and waits.
void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args);
// Memory for `d` whose bytes come from strider's allocator; `keep` holds them.
dnnl::memory allocate(const dnnl::memory::desc& d, Tensor& keep);

// `weight` (described by `user`) in the layout `want`. A reordered copy is kept and reused while
// the weight's storage holds the same contents (StorageImpl::generation), so forward, backward
// and the next step reorder a weight once per update instead of once per call. The copies live
// in strider's allocator (memory_stats() counts them) and go when their weight changes or dies.
// `keep_alive` holds the copy's bytes until the primitive using it has run.
dnnl::memory weights_in(const Tensor& weight, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                        Tensor& keep_alive);
// Bytes held by reordered weight copies (for tests and memory accounting).
int64_t cached_weight_bytes();
void reorder_into(const dnnl::memory& src, const dnnl::memory& dst);
// The blocked layout `want` as kernels/cpu/blocked_panels.h describes it: two dimensions, float32
// in 16 x N blocks (BA16a<N>b) or bfloat16 in 16 pairs x N (BA16a<N>b2a), no padding but the
// blocks'; nullopt for any other layout.
std::optional<cpu::BlockedPanels> blocked_panels_of(const dnnl::memory::desc& want);

// Key builder: every field that changes the primitive goes in.
class KeyBuilder {
 public:
  explicit KeyBuilder(const char* op) : key_(op) {}
  KeyBuilder& add(IntArrayRef v);
  KeyBuilder& add(int64_t v);
  KeyBuilder& add(const Tensor& t);  // sizes, strides, dtype
  std::string str() const { return key_; }

 private:
  std::string key_;
};

// A thread-safe cache of primitive descriptors (and their primitives) by key, so a training
// loop never rebuilds a primitive for shapes it has seen. Each lives in a slot of the process's
// Context (cache<Entry>()), which empties it in empty_cache(). get() returns a copy (oneDNN
// objects are reference-counted handles), so a clear never pulls an entry from under a caller.
template <class Entry>
class PrimitiveCache {
 public:
  template <class Make>
  Entry get(const std::string& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    if (entries_.size() > 4096) entries_.clear();  // shapes vary wildly: start over
    return entries_.emplace(key, created_or_declined(key, make)).first->second;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// The process's cache of `Entry`s.
template <class Entry>
PrimitiveCache<Entry>& cache() {
  return Context::process().slot<PrimitiveCache<Entry>>();
}

}  // namespace strider::kernels::dnnl_ops
