#pragma once
// Choosing among oneDNN's implementations of one primitive by timing them, when
// Context::kernel_autotune is on (set_kernel_autotune(), STRIDER_AUTOTUNE=1; off by default).
//
// oneDNN ranks the implementations that accept a problem in a fixed order. On a given CPU and
// shape a later one can be faster: for ResNet-50's bfloat16 channels-last convolutions on an
// AVX-512 BF16 host, the direct jit kernels beat the first-ranked brgemm ones by 5-20% on most
// shapes (docs/benchmarks.md). With autotune on, the first call of a shape runs every candidate
// on that call's own buffers and the primitive cache keeps the fastest, as cudnn.benchmark does.
// The choice depends on timing, so results may differ in the last bits from run to run: that is
// why it is off by default and deterministic mode refuses it.
#include <functional>
#include <unordered_map>
#include <vector>

#include "kernels/dnnl/context.h"

namespace strider::kernels::dnnl_ops {

// A candidate's arguments. Inputs whose format the candidate chooses (weights) are reordered
// into temporary memory held by `keep`, never into the weight cache, so the candidates that lose
// leave nothing behind; outputs may be written (the chosen primitive runs after).
using BindArgs = std::function<std::unordered_map<int, dnnl::memory>(const dnnl::primitive_desc&, std::vector<Tensor>& keep)>;

// `each(visit)` builds the problem's primitive descriptor and calls `visit` with each of oneDNN's
// implementations in oneDNN's order, while `visit` returns true. (oneDNN's iterator points into
// the operation descriptor it was made from, so the walk happens where that descriptor lives;
// and re-walking is no way to get back to the k-th one: once a primitive exists, oneDNN's
// primitive cache can restart a new walk at its first implementation.)
using Visit = std::function<bool(const dnnl::primitive_desc&)>;
using EachImplementation = std::function<void(const Visit&)>;

// oneDNN's first choice when autotune is off; with it on, the candidate (reference
// implementations excluded) that ran fastest on `bind`'s arguments. Verbose mode logs each
// candidate's time.
dnnl::primitive_desc choose_implementation(const char* op, const EachImplementation& each, const BindArgs& bind);

// Walks `pd`'s implementations from the current one; for `each`.
void walk(dnnl::primitive_desc pd, const Visit& visit);

// Memory in `want`'s format holding `user`'s bytes: `user` itself when the formats agree, else a
// temporary reordered copy that `keep` holds.
dnnl::memory reordered_copy(const dnnl::memory& user, const dnnl::memory::desc& want, std::vector<Tensor>& keep);

}  // namespace strider::kernels::dnnl_ops
