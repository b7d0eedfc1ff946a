#include "epoch.h"

#include <chrono>
#include <cmath>

#include "train_step.h"

namespace strider::tools {

EpochCounts run_epoch(Training& t, int64_t epoch, int64_t first_batch) {
  const TrainOptions& o = t.options;
  const int64_t steps = t.schedule.steps_per_epoch;
  RunState& s = t.state;
  t.task.start_epoch(epoch, first_batch);
  const auto start = std::chrono::steady_clock::now();
  EpochCounts e{.batch = first_batch};
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
