#include "epoch.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "train_step.h"

namespace strider::tools {
namespace {

// The run info's record of the epoch's losses so far, "<batches> <sum in %a>", saved with every
// checkpoint: a resumed epoch's train_loss (metrics.jsonl) then averages the whole epoch, not only
// the batches after the resume.
constexpr const char* kEpochLosses = "epoch_losses";

void record_losses(RunState& s, const EpochCounts& e) {
  char text[64];
  std::snprintf(text, sizeof text, "%lld %a", static_cast<long long>(e.carried_batches + e.trained),
                e.carried_loss_sum + e.loss_sum);
  s.run_info[kEpochLosses] = text;
}

// The losses of the batches before `first_batch`, from the checkpoint the run resumed.
void carry_losses_in(const RunState& s, int64_t first_batch, EpochCounts& e) {
  const auto it = s.run_info.find(kEpochLosses);
  if (first_batch == 0 || it == s.run_info.end()) return;  // a checkpoint from before the record: the rest only
  const std::string& text = it->second;
  int64_t batches = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), batches);
  char* sum_end = nullptr;
  const double sum = error == std::errc() && *end == ' ' ? std::strtod(end + 1, &sum_end) : NAN;
  STRIDER_CHECK(batches == first_batch && sum_end == text.data() + text.size() && std::isfinite(sum), "train",
                "the checkpoint's record of its epoch's losses, '", text, "', does not describe the ", first_batch,
                " batches its data position says were trained; the checkpoint is inconsistent");
  e.carried_batches = batches;
  e.carried_loss_sum = sum;
}

}  // namespace

EpochCounts run_epoch(Training& t, int64_t epoch, int64_t first_batch) {
  const TrainOptions& o = t.options;
  const int64_t steps = t.schedule.steps_per_epoch;
  RunState& s = t.state;
  t.task.start_epoch(epoch, first_batch);
  const auto start = std::chrono::steady_clock::now();
  EpochCounts e{.batch = first_batch};
  carry_losses_in(s, first_batch, e);
  while (e.batch < steps && s.global_step < t.schedule.stop_step) {
    auto b = t.task.next();
    if (!b) break;
    s.last_loss = o.deterministic ? deterministic_step(t, *b) : train_step(t, *b);
    t.sched.step();
    STRIDER_CHECK(std::isfinite(s.last_loss), "train", "the loss became ", s.last_loss, " at epoch ", epoch + 1,
                  " step ", e.batch + 1, "; lower the learning rate (--lr)");
    e.loss_sum += s.last_loss;
    e.samples += b->target.numel();
    ++e.batch;
    ++e.trained;
    ++s.global_step;
    s.position = e.batch == steps ? checkpoint::DataPosition{epoch + 1, 0, o.batch_size}
                                  : checkpoint::DataPosition{epoch, e.batch, o.batch_size};
    record_losses(s, e);
    if (o.checkpoint_every > 0 && s.global_step % o.checkpoint_every == 0 && s.global_step < t.schedule.stop_step)
      t.checkpoints.save(s.global_step);
    if (RunMemorySnapshots* memory = t.checkpoints.memory(); memory && s.global_step < t.schedule.stop_step)
      memory->after_step(s.global_step);
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    t.report.step(epoch, s.global_step, s.last_loss, e);
  }
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

}  // namespace strider::tools
