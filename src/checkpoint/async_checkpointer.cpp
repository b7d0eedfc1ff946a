#include "strider/checkpoint/async_checkpointer.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "checkpoint/save_plan.h"
#include "strider/core/error.h"
#include "strider/ops/factory.h"

namespace strider::checkpoint {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct AsyncCheckpointer::State {
  std::string run_dir;
  std::shared_ptr<dist::ProcessGroup> pg;
  CheckpointOptions options;
  AsyncSaveStats stats;
  std::string last_committed;

  // The save in flight: its plan, its writer, and what the writer has done (under mu).
  std::unique_ptr<detail::SavePlan> plan;
  std::thread writer;
  std::mutex mu;
  std::condition_variable cv;
  bool data_read = false, written = false;
  std::string report;
  bool read_checked = false;

  // The optimizer whose step pre-hook calls before_update; `hook_alive` expires with the hook.
  optim::Optimizer* hooked = nullptr;
  int hook = -1;
  std::weak_ptr<int> hook_alive;

  bool in_flight() const { return plan != nullptr; }
  std::string changed;  // a live tensor written before the writer had read it

  // Blocks until the writer no longer reads the live tensors. The first time, before anything
  // may change them legitimately, checks that nothing did while it read.
  void wait_data_read() {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return data_read; });
    }
    if (read_checked) return;
    read_checked = true;
    changed = detail::changed_since_planned(*plan);
  }

  bool is_written() {
    std::lock_guard lock(mu);
    return written;
  }

  // Collective: joins the writer and commits (or fails on every rank, naming the cause).
  void commit() {
    wait_data_read();
    writer.join();
    std::unique_ptr<detail::SavePlan> p = std::move(plan);
    std::string mine = report;
    if (!changed.empty())
      mine = nlohmann::json{{"ok", false},
                            {"error", "tensor '" + changed + "' was written while the asynchronous save read it; "
                                      "only optimizer.step() may change parameters and moments during a save (call "
                                      "AsyncCheckpointer::before_update() before any other change)"}}
                 .dump();
    last_committed = detail::commit_save(*p, pg.get(), mine, options.keep_last);
    ++stats.committed;
  }

  // Collective while a save is in flight (see AsyncCheckpointer::before_update).
  void before_update() {
    if (!in_flight()) return;
    const auto t0 = std::chrono::steady_clock::now();
    wait_data_read();
    bool all_written = is_written();
    if (pg && pg->size() > 1) {
      Tensor lagging = tensor(std::vector<int64_t>{all_written ? 0 : 1});
      dist::CollectiveLabel label("async checkpoint: is every rank's file written");
      pg->all_reduce(lagging, dist::ReduceOp::Max);
      all_written = lagging.item<int64_t>() == 0;
    }
    if (all_written) commit();
    count_stall(t0);
  }

  void count_stall(std::chrono::steady_clock::time_point t0) {
    const double s = seconds_since(t0);
    stats.stall_seconds += s;
    stats.max_stall_seconds = std::max(stats.max_stall_seconds, s);
  }
};

AsyncCheckpointer::AsyncCheckpointer(std::string run_dir, std::shared_ptr<dist::ProcessGroup> pg,
                                     CheckpointOptions options)
    : state_(std::make_shared<State>()) {
  detail::validate_options(run_dir, options, "AsyncCheckpointer");
  state_->run_dir = std::move(run_dir);
  state_->pg = std::move(pg);
  state_->options = options;
}

AsyncCheckpointer::~AsyncCheckpointer() {
  if (state_->writer.joinable()) state_->writer.join();
  if (state_->hooked && !state_->hook_alive.expired()) state_->hooked->remove_step_hook(state_->hook);
}

void AsyncCheckpointer::save(int64_t step, const TrainingState& state) {
  const auto t0 = std::chrono::steady_clock::now();
  State& s = *state_;
  detail::check_save_request(step, state, s.pg.get());
  if (s.in_flight()) s.commit();  // at most one save in flight
  const int rank = s.pg ? s.pg->rank() : 0, world = s.pg ? s.pg->size() : 1;
  s.plan = std::make_unique<detail::SavePlan>(detail::plan_save(s.run_dir, step, state, rank, world, true));
  uint64_t copied = 0;
  for (const detail::Piece& p : s.plan->pieces) copied += p.data.nbytes();
  for (const detail::SavePlan::Live& l : s.plan->live) copied -= l.rows.nbytes();
  s.stats.snapshot_bytes = std::max(s.stats.snapshot_bytes, copied);
  ++s.stats.saves;

  if (state.optimizer && (s.hooked != state.optimizer || s.hook_alive.expired())) {
    auto alive = std::make_shared<int>(0);
    std::weak_ptr<State> weak = state_;
    s.hook = state.optimizer->register_step_pre_hook([weak, alive] {
      if (auto st = weak.lock()) st->before_update();
    });
    s.hooked = state.optimizer;
    s.hook_alive = alive;
  }

  {
    std::lock_guard lock(s.mu);
    s.data_read = s.written = s.read_checked = false;
    s.report.clear();
    s.changed.clear();
  }
  s.writer = std::thread([&s] {
    std::string r = detail::write_rank_file(*s.plan, s.options.block_bytes, [&s] {
      std::lock_guard lock(s.mu);
      s.data_read = true;
      s.cv.notify_all();
    });
    std::lock_guard lock(s.mu);
    s.report = std::move(r);
    s.written = true;
    s.cv.notify_all();
  });
  s.count_stall(t0);
}

void AsyncCheckpointer::before_update() { state_->before_update(); }

std::string AsyncCheckpointer::wait() {
  const auto t0 = std::chrono::steady_clock::now();
  if (state_->in_flight()) state_->commit();
  state_->count_stall(t0);
  return state_->last_committed;
}

const std::string& AsyncCheckpointer::run_dir() const { return state_->run_dir; }
AsyncSaveStats AsyncCheckpointer::stats() const { return state_->stats; }

}  // namespace strider::checkpoint
