#include "checkpoint/holdings.h"

#include <map>

#include "strider/core/error.h"
#include "strider/fsdp/distributed_data_parallel.h"
#include "strider/fsdp/flat_layout.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"

namespace strider::checkpoint::detail {
namespace {

Holding whole(const std::string& key, const Tensor& t, int rank, int world) {
  return {.key = key, .rows = t, .global_shape = t.sizes().vec(), .row_offset = 0, .replica_rank = rank,
          .replicas = world, .split_rows = false};
}

}  // namespace

ModelLayout describe_model(nn::Module& given, int rank, int world) {
  nn::Module& model = fsdp::whole_model_of(given, "checkpoint");
  ModelLayout out;
  fsdp::FullyShardedDataParallel* engine = dynamic_cast<fsdp::FullyShardedDataParallel*>(&model);
  if (auto* ddp = dynamic_cast<fsdp::DistributedDataParallel*>(&model)) engine = &ddp->engine();
  if (!engine) {  // a plain module: whole tensors, written by rank 0; one unit of every parameter
    out.strategy = "local";
    out.units.push_back({"(root)", out.strategy, {}});
    for (auto& [name, p] : model.named_parameters()) {
      out.params.push_back({name, "(root)", p, whole(model_key(name), p, rank, world)});
      out.units.back().params.push_back(name);
    }
    for (auto& [name, b] : model.named_persistent_buffers()) out.buffers.push_back(whole(model_key(name), b, rank, world));
    return out;
  }
  out.strategy = dynamic_cast<fsdp::DistributedDataParallel*>(&model) || engine->built_as_ddp()
                     ? "ddp"
                     : fsdp::to_string(engine->options().sharding_strategy);
  std::map<std::string, size_t> unit_index;
  for (fsdp::ParameterShard& s : engine->parameter_shards()) {
    Holding h{.key = model_key(s.name), .rows = s.rows, .global_shape = s.global_sizes, .row_offset = s.row_offset,
              .replica_rank = s.replica_rank, .replicas = s.replicas, .split_rows = true};
    auto [it, fresh] = unit_index.emplace(s.unit, out.units.size());
    if (fresh) out.units.push_back({s.unit, out.strategy, {}});
    out.units[it->second].params.push_back(s.name);
    out.params.push_back({s.name, s.unit, s.padded, std::move(h)});
  }
  for (auto& [name, b] : engine->named_persistent_buffers()) out.buffers.push_back(whole(model_key(name), b, rank, world));
  return out;
}

const ParamView& param_of(const ModelLayout& layout, const Tensor& t, const std::string& optimizer_name) {
  for (const ParamView& p : layout.params)
    if (p.padded.is_same(t)) return p;
  STRIDER_CHECK(false, "checkpoint", "the optimizer's parameter '", optimizer_name,
                "' is not a parameter of the model; build the optimizer on model->named_parameters() of the model "
                "passed in the same TrainingState");
  return layout.params.front();
}

Holding state_holding(const ParamView& param, const std::string& key, const Tensor& state, int rank, int world) {
  const std::string k = optimizer_key(param.name, key);
  if (state.sizes() != param.padded.sizes()) return whole(k, state, rank, world);
  Holding h = param.holding;
  h.key = k;
  h.rows = param.holding.global_shape.empty() ? state : state.narrow(0, 0, param.holding.rows.size(0));
  return h;
}

std::optional<Piece> piece_to_write(const Holding& h) {
  if (h.global_shape.empty()) {  // one row, written by the first replica
    if (h.replica_rank != 0) return std::nullopt;
    return Piece{h.key, h.rows, h.global_shape, 0, 1};
  }
  const int64_t rows = h.rows.size(0);
  int64_t begin = 0, end = rows;
  if (h.split_rows) {  // replicas split the rows as FSDP splits a parameter over its ranks
    const fsdp::RowRange share = fsdp::rows_of_rank(rows, h.replica_rank, h.replicas);
    begin = share.begin;
    end = share.end;
  } else if (h.replica_rank != 0) {
    return std::nullopt;
  }
  if (begin == end) return std::nullopt;
  return Piece{h.key, h.rows.narrow(0, begin, end - begin), h.global_shape, h.row_offset + begin,
               h.row_offset + end};
}

}  // namespace strider::checkpoint::detail
