#include "resume.h"

#include <iostream>

#include "resume_check.h"

namespace strider::tools {

int64_t resume(const TrainOptions& o, const TrainTask& task, const checkpoint::TrainingState& state,
               const Parallel& par, const Schedule& schedule) {
  const std::string from = checkpoint::resolve_checkpoint(o.resume);
  const checkpoint::Manifest saved = checkpoint::read_manifest(from);
  const auto model_it = saved.user.find("model");
  STRIDER_CHECK(model_it != saved.user.end() && model_it->second == task.model_signature(), "train", from,
                " holds a '", model_it == saved.user.end() ? std::string("(unnamed)") : model_it->second,
                "' model, not '", task.model_signature(), "'; pass the model flags it was trained with");
  STRIDER_CHECK(saved.data && saved.data->global_batch_size == o.batch_size, "train", from, " was saved with --batch-size ",
                saved.data ? saved.data->global_batch_size : 0, " and this run has --batch-size ", o.batch_size,
                "; its data position counts global batches, so resume with the same --batch-size");
  STRIDER_CHECK(o.reset_optimizer || saved.optimizer == state.optimizer->name(), "train", from, " holds ",
                saved.optimizer, " state but this run uses --optimizer ", state.optimizer->name(),
                "; use the same optimizer, or --reset-optimizer to start with fresh optimizer state");
  checkpoint::load(from, state, par.pg.get(), {.optimizer = !o.reset_optimizer});
  STRIDER_CHECK(state.user->at("model") == task.model_signature(), "train", "internal: the model signature changed");
  const checkpoint::DataPosition& position = *state.data;
  STRIDER_CHECK(position.batches_done <= schedule.steps_per_epoch, "train", from, " stopped after batch ",
                position.batches_done, " of epoch ", position.epoch + 1, " but this run's epochs have ",
                schedule.steps_per_epoch, " batches; resume with the --limit-batches it was saved with");
  const int64_t step = saved.step;
  if (o.reset_optimizer) state.scheduler->set_last_step(step);
  STRIDER_CHECK(position.epoch < o.epochs, "train", from, " was saved after epoch ", position.epoch, " and --epochs is ",
                o.epochs, ": nothing is left to train; raise --epochs to train further");
  check_resume_within_schedule(from, step, o.epochs, schedule.steps_per_epoch);
  STRIDER_CHECK(o.max_steps == 0 || step < o.max_steps, "train", from, " was saved after step ", step,
                " and --max-steps is ", o.max_steps, ": nothing is left to train; raise --max-steps");
  if (par.lead())  // stderr, with --json too: `strider launch` reads it to time a restart
    std::cerr << "resuming " << from << ": step " << step << ", epoch " << position.epoch + 1 << " batch "
              << position.batches_done + 1 << "\n";
  return step;
}

}  // namespace strider::tools
