#pragma once
// Deferred initialization: build a model without allocating its parameters, then materialize
// them whole (nn::materialize) or only as each rank's shard (FullyShardedDataParallel::wrap,
// which never allocates an unsharded parameter it does not compute with, except to draw an
// orthogonal_ one: its QR needs the whole matrix, drawn in float64 for each materialization).
//
//   std::shared_ptr<models::GPT> gpt;
//   { nn::DeferredInit deferred(/*seed=*/42); gpt = std::make_shared<models::GPT>(config); }
//   auto sharded = fsdp::FullyShardedDataParallel::wrap(gpt, pg, options);  // shards only
//
// While a DeferredInit is alive on a thread, each registered parameter becomes a stand-in
// with its shape, dtype and strides but no memory, and the nn::init calls on it record what
// they would have written instead of writing it. Values come from a counter-based generator
// keyed by (seed, the parameter's name in the module being materialized, element index), so an
// element's value never depends on which rank makes it or how the tensor is split: the shards
// FSDP makes at any world size gather to exactly what nn::materialize makes in one process.
// (The values differ from an eager build drawing from the global generator.) A parameter whose
// value no init call set keeps the tensor it was registered with. Buffers are made as usual.
// Using a stand-in's data before materializing it is an error naming it, never a crash.
#include <cstdint>
#include <optional>
#include <string>

#include "strider/core/tensor.h"

namespace strider::nn {

class Module;

class DeferredInit {
 public:
  explicit DeferredInit(uint64_t seed);
  ~DeferredInit();
  DeferredInit(const DeferredInit&) = delete;
  DeferredInit& operator=(const DeferredInit&) = delete;

 private:
  std::optional<uint64_t> outer_;  // an enclosing DeferredInit's seed
};

// Whether `t` is a stand-in not yet materialized.
bool is_deferred(const Tensor& t);
// Writes rows [row_begin, row_begin + dst.size(0)) of the stand-in `t` (the whole of a 0-d
// one), as the parameter named `name`, into `dst` (those rows' shape, any strides and dtype).
void materialize_rows(const Tensor& t, const std::string& name, int64_t row_begin, const Tensor& dst);
// The materialized value of the stand-in `t` named `name`: fresh memory in its dtype and strides.
Tensor materialize_tensor(const Tensor& t, const std::string& name);
// Materializes every stand-in among `module`'s parameters, under their names in `module`.
void materialize(Module& module);

namespace deferred {

// What an init call recorded for a stand-in.
struct InitRecipe {
  enum class Kind { Value, Constant, Uniform, Normal, TruncNormal, Orthogonal } kind = Kind::Value;
  // constant a; uniform [a, b); normal mean a, std b; truncated normal mean a, std b within
  // [lo, hi]; orthogonal gain a
  double a = 0.0, b = 0.0, lo = 0.0, hi = 0.0;
  ScalarType dtype = kFloat;  // drawn values are rounded to this (the dtype at the init call)
  Tensor value;             // Kind::Value: the tensor the parameter was registered with
};

// Module::register_parameter under a DeferredInit: the stand-in for `value` (or nullopt).
std::optional<Tensor> defer_parameter(const Tensor& value);
// nn::init: records `recipe` if `t` is a stand-in (and returns true); false otherwise.
bool record_init(const Tensor& t, InitRecipe recipe);
// Module::to on a stand-in: a stand-in of that dtype or memory format with the same recipe.
Tensor retarget(const Tensor& t, ScalarType dtype, std::optional<MemoryFormat> format);

}  // namespace deferred
}  // namespace strider::nn
