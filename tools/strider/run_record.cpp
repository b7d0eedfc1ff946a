#include "run_record.h"

#include <strider/core/error.h>
#include <strider/io/crc32c.h>

#include "schedule.h"
#include "train_task.h"

namespace strider::tools {

std::vector<RunProperty> run_record(const TrainOptions& o, const TrainTask& task, const Schedule& schedule) {
  std::vector<RunProperty> record = {
      {"model", "the model", task.model_signature(), "pass the model flags it was trained with", true},
      {"seed", "--seed", std::to_string(o.seed),
       "the seed draws the held-out split and every epoch's order, so resume with the --seed it was saved with", false},
  };
  for (RunProperty& p : task.data_record()) record.push_back(std::move(p));
  // After the data, which sets the full batches too (a changed data set is named as the cause).
  // The epochs' boundaries, the data position and the learning-rate schedule all count these.
  record.push_back({"steps_per_epoch", "steps per epoch (the data's full batches, capped by --limit-batches)",
                    std::to_string(schedule.steps_per_epoch),
                    "the epochs' boundaries and the learning-rate schedule count them, so resume with the "
                    "--limit-batches it was saved with (--max-steps ends a leg early without changing them)"});
  return record;
}

std::map<std::string, std::string> as_user_strings(const std::vector<RunProperty>& record) {
  std::map<std::string, std::string> user;
  for (const RunProperty& p : record) user[p.key] = p.value;
  return user;
}

std::vector<std::string> check_run_record(const std::string& checkpoint, const std::map<std::string, std::string>& saved,
                                          const std::vector<RunProperty>& now) {
  std::vector<std::string> unrecorded;
  for (const RunProperty& p : now) {
    const auto it = saved.find(p.key);
    if (it == saved.end()) {
      STRIDER_CHECK(!p.in_every_checkpoint, "train", checkpoint, " does not record ", p.what,
                    " (manifest field user.", p.key, "), which every checkpoint of strider train does; it was not "
                    "saved by strider train. Resume from one that was, or start a new run");
      unrecorded.push_back(p.what);
      continue;
    }
    STRIDER_CHECK(it->second == p.value, "train", checkpoint, " was saved with ", p.what, " '", it->second,
                  "' but this run has '", p.value, "'; ", p.fix, ", or start a new run (another --out)");
  }
  return unrecorded;
}

void DataDigest::add(const void* data, size_t bytes) { crc_ = io::crc32c(crc_, data, bytes); }

void DataDigest::add(const std::string& text) {
  add(static_cast<int64_t>(text.size()));
  add(text.data(), text.size());
}

void DataDigest::add(int64_t value) { add(&value, sizeof value); }

std::string DataDigest::hex() const { return io::crc32c_hex(crc_); }

}  // namespace strider::tools
