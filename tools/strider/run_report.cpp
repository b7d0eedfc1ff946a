#include "run_report.h"

#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace strider::tools {
namespace {

void print_progress(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss, double rate,
                    const char* unit, double eta, bool tty) {
  const int width = 24;
  const int filled = steps ? static_cast<int>(width * step / steps) : width;
  std::fprintf(stderr, "%sepoch %lld/%lld [%s%s] %lld/%lld loss %.4f  %.0f %s/s  ETA %02d:%02d%s",
               tty ? "\r" : "", static_cast<long long>(epoch), static_cast<long long>(epochs),
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
               static_cast<long long>(step), static_cast<long long>(steps), loss, rate, unit,
               static_cast<int>(eta) / 60, static_cast<int>(eta) % 60, tty ? "   " : "\n");
  std::fflush(stderr);
}

}  // namespace

std::string json_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RunReport::RunReport(const TrainOptions& o, const TrainTask& task, const Schedule& schedule, bool lead, int world)
    : o_(o), task_(task), schedule_(schedule), lead_(lead), tty_(lead && o.progress && ::isatty(STDERR_FILENO)),
      world_(world) {
  if (!lead_) return;
  metrics_.open(o.out_dir + "/metrics.jsonl", o.resume.empty() ? std::ios::trunc : std::ios::app);
  STRIDER_CHECK(metrics_.good(), "train", "cannot write ", o.out_dir, "/metrics.jsonl");
}

void RunReport::start(int64_t model_parameters) {
  start_ = std::chrono::steady_clock::now();
  if (o_.json || !lead_) return;
  std::cerr << "training " << task_.model_signature() << " (" << model_parameters << " parameters) on "
            << task_.describe() << ", " << o_.memory_format << ", " << o_.dtype << ", " << omp_get_max_threads()
            << " threads, " << o_.epochs << " epochs of " << schedule_.steps_per_epoch << " steps"
            << (world_ > 1 ? ", " + o_.fsdp + " on " + std::to_string(world_) + " ranks" : std::string()) << "\n";
}

void RunReport::step(int64_t epoch, int64_t global_step, double loss, const EpochCounts& e) {
  loss_curve_.points.emplace_back(static_cast<double>(global_step), loss);
  const int64_t steps = schedule_.steps_per_epoch;
  const bool due = tty_ ? (e.batch % 5 == 0 || e.batch == steps) : (e.batch % std::max<int64_t>(1, steps / 4) == 0);
  if (!lead_ || !o_.progress || o_.json || !due) return;
  const double rate = static_cast<double>(e.samples * world_) / std::max(e.seconds, 1e-9);
  const double eta = (schedule_.stop_step - global_step) * (e.seconds / e.trained);
  print_progress(epoch + 1, o_.epochs, e.batch, steps, e.mean_loss(), rate, task_.sample_unit(), eta, tty_);
}

void RunReport::end_of_epoch(int64_t epoch, int64_t global_step, const EpochCounts& e, const EvalResult& score,
                             double lr) {
  if (tty_ && !o_.json) std::fputc('\n', stderr);
  eval_curve_.y_label = score.metric;
  eval_curve_.points.emplace_back(static_cast<double>(epoch + 1), score.value);
  const double samples = static_cast<double>(e.samples * world_);
  const nlohmann::json rec = {{"epoch", epoch + 1}, {"step", global_step}, {"train_loss", e.mean_loss()},
                              {score.metric, score.value}, {"epoch_seconds", e.seconds},
                              {std::string(task_.sample_unit()) + "_per_s", samples / std::max(e.seconds, 1e-9)},
                              {"lr", lr}};
  if (!lead_) return;
  metrics_ << json_line(rec) << "\n" << std::flush;
  if (!o_.json)
    std::cerr << "epoch " << epoch + 1 << (e.batch < schedule_.steps_per_epoch ? " (stopped at --max-steps)" : "")
              << ": train loss " << e.mean_loss() << ", " << score.summary << ", " << e.seconds << " s\n";
}

double RunReport::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RunReport::write_plot(const std::string& metric) {
  eval_curve_.title = metric;
  write_svg_plot(o_.out_dir + "/curves.svg", {loss_curve_, eval_curve_});
}

}  // namespace strider::tools
