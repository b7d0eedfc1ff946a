#include "train_step.h"

#include <cmath>
#include <optional>

namespace strider::tools {

double train_step(Training& t, const io::Batch& b) {
  nn::Module& model = *t.par.model;
  Tensor loss;
  {
    std::optional<nn::CastParameters> cast;
    if (t.par.cast_dtype == kBFloat16) cast.emplace(model, kBFloat16);
    loss = t.task.loss(model(b.input), b);
    t.opt.zero_grad();
    loss.backward();
  }
  t.opt.step();
  double value = loss.item<double>();
  if (t.par.pg) {  // the global batch's loss
    Tensor l = full({1}, value, kDouble);
    t.par.pg->all_reduce(l, dist::ReduceOp::Avg);
    value = l.item<double>();
  }
  return value;
}

// This rank's share of the global batch is micro-batches r, r + W, ... of it (the samplers
// interleave ranks), that is rows k, k + L, ... of its batch for its k-th micro-batch (L per rank).
double deterministic_step(Training& t, const io::Batch& b) {
  const Parallel& par = t.par;
  const int64_t total_micro = micro_batches(t.options), local_micro = total_micro / par.world;
  t.opt.zero_grad();
  dist::ExactSum losses;
  for (int64_t k = 0; k < local_micro; ++k) {
    // A cast per micro-batch: each backward frees its graph, the cast's included.
    std::optional<nn::CastParameters> cast;
    if (par.cast_dtype == kBFloat16) cast.emplace(*par.model, kBFloat16);
    io::Batch mb;
    mb.input = b.input.slice(0, k, std::nullopt, local_micro).contiguous(b.input.suggest_memory_format());
    mb.target = b.target.slice(0, k, std::nullopt, local_micro).contiguous();
    const int64_t j = par.rank + k * par.world;
    const auto micro_batch_index = static_cast<uint64_t>(t.state.global_step * total_micro + j);
    manual_seed(t.options.seed * 0x9E3779B97F4A7C15ull + micro_batch_index + 1);
    Tensor loss = t.task.loss((*par.model)(mb.input), mb);
    loss.backward();
    losses.add(loss.item<double>());
  }
  t.opt.step();
  if (par.pg) dist::all_reduce_exact(*par.pg, losses);
  return losses.overflowed() ? std::nan("") : losses.value() / static_cast<double>(total_micro);
}

}  // namespace strider::tools
