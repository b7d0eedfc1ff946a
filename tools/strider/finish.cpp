#include "finish.h"

#include <omp.h>

#include <iostream>
#include <optional>

#include "state_digests.h"
#include "strider/dist/mesh.h"
#include "strider/fsdp/cost_model.h"

namespace strider::tools {
namespace {

// What the cost model says one training step sends, per rank and (normal mode, ranks placed by
// host) out of rank 0's host: the figures the emulated-hosts test checks on the link. Collective.
nlohmann::json traffic_prediction(const Training& t) {
  nlohmann::json out = nlohmann::json::object();
  if (!t.par.engine || !t.par.pg) return out;
  const std::vector<fsdp::UnitLayout> units = t.par.engine->unit_layouts();
  out["predicted_sent_bytes_per_step"] = fsdp::bytes_sent_per_step(units);
  const dist::HostLayout hosts = dist::host_layout(*t.par.pg);
  out["hosts"] = hosts.hosts;
  if (hosts.regular) out["ranks_per_host"] = hosts.ranks_per_host;
  if (hosts.regular && hosts.hosts > 1 && !t.options.deterministic)
    out["predicted_bytes_leaving_host_per_step"] = fsdp::bytes_leaving_host_per_step(units, hosts.ranks_per_host, 0);
  return out;
}

void print_summary(const Training& t, const EvalResult& score, const std::string& checkpoint, double seconds,
                   const std::optional<StateDigests>& digests, const nlohmann::json& traffic) {
  const TrainOptions& o = t.options;
  const int64_t steps = t.state.global_step;
  if (!o.json) {
    const std::string extent = steps < t.schedule.total_steps
                                   ? "step " + std::to_string(steps) + " of " + std::to_string(t.schedule.total_steps) +
                                         " (stopped at --max-steps)"
                                   : std::to_string(o.epochs) + " epochs";
    std::cout << "done: " << extent << " in " << seconds << " s, " << score.summary << "\n  metrics " << o.out_dir
              << "/metrics.jsonl, plot " << o.out_dir << "/curves.svg, checkpoint " << checkpoint << "\n";
    return;
  }
  nlohmann::json summary = {{"model", t.task.model_signature()}, {"data", t.task.describe()},
                            {"memory_format", o.memory_format},
                            {"dtype", o.dtype}, {"epochs", o.epochs}, {score.metric, score.value},
                            {"final_loss", t.state.last_loss}, {"seconds", seconds}, {"out_dir", o.out_dir},
                            {"parallel", o.fsdp}, {"strategy", o.fsdp}, {"ranks", t.par.world},
                            {"world_size", t.par.world}, {"deterministic", o.deterministic},
                            {"threads", omp_get_max_threads()}, {"isa", cpu_isa_name()}, {"steps", steps},
                            {"checkpoint", checkpoint}};
  if (!o.export_model.empty()) summary["exported_model"] = o.export_model;
  if (auto st = t.checkpoints.background_stats()) {
    summary["checkpoint_stall_seconds"] = st->stall_seconds;
    summary["checkpoint_max_stall_seconds"] = st->max_stall_seconds;
  }
  if (o.deterministic) summary["micro_batches"] = micro_batches(o);
  if (const RunMemorySnapshots* memory = t.checkpoints.memory()) {
    // Beside what was measured, the memory formula's figure (float32 parameters, the optimizer's state).
    nlohmann::json m = memory->summary();
    const fsdp::OptimizerFootprint opt = fsdp::optimizer_footprint(t.opt, false);
    const int copies = m["partner"].get<int>() >= 0 ? 2 : 1;
    m["predicted_host_bytes_per_rank"] =
        t.par.engine ? fsdp::memory_formula(*t.par.engine, opt, copies).memory_snapshots
                     : int64_t{copies} * (4 + opt.states * (opt.state_bytes ? opt.state_bytes : 4)) *
                           t.par.model->num_parameters();
    summary["memory_snapshots"] = m;
  }
  if (t.par.engine) {  // how the root unit is laid out: hybrid strategies shard within a host
    for (const fsdp::UnitLayout& u : t.par.engine->unit_layouts())
      if (u.is_root) {
        summary["shard_group_size"] = u.layout.ranks();
        summary["replicas"] = u.replicas;
      }
  }
  summary.update(traffic);
  summary["params_sha256"] = digests->params;
  summary["optimizer_sha256"] = digests->optimizer;
  std::cout << json_line(summary) << "\n";
}

}  // namespace

int finish_training(Training& t, const EvalResult& score) {
  const TrainOptions& o = t.options;
  const Parallel& par = t.par;
  const int64_t step = t.state.global_step;
  if (t.checkpoints.last_saved_step() != step) t.checkpoints.save(step);  // the end of training always saves
  const std::string checkpoint = t.checkpoints.wait();
  if (RunMemorySnapshots* memory = t.checkpoints.memory()) memory->finish();  // the checkpoint holds it all now
  if (!o.export_model.empty()) checkpoint::save_full(o.export_model, *par.model, step, par.pg.get());
  if (!o.json) t.task.after_training(*par.model, par.cast_dtype, par.lead());
  const double seconds = t.report.seconds();
  std::optional<StateDigests> digests;
  nlohmann::json traffic = nlohmann::json::object();
  if (o.json) {
    traffic = traffic_prediction(t);
    digests = state_digests(*par.model, par.engine, t.opt);
    // Every rank hashed the same full state; a difference would mean the ranks diverged.
    if (par.pg)
      dist::check_same_across_ranks(*par.pg, "params_sha256 and optimizer_sha256",
                                    {digests->params, digests->optimizer});
  }
  if (!par.lead()) return 0;
  t.report.write_plot(score.metric);
  print_summary(t, score, checkpoint, seconds, digests, traffic);
  return 0;
}

}  // namespace strider::tools
