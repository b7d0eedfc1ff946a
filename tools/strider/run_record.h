#pragma once
// The run record: what a checkpoint says about the run that saved it beyond its tensors, so that
// `strider train --resume` continues that run and not a different one. Each property decides the
// model, which samples are trained on and which are held out, or the order and grouping of the
// steps; a resume that changes one would train on another split (held-out images trained on) or
// another schedule without a word. The record is the checkpoint's user strings (manifest "user").
#include <map>
#include <string>
#include <vector>

#include "train_options.h"

namespace strider::tools {

class TrainTask;
struct Schedule;

struct RunProperty {
  std::string key;     // its name among the checkpoint's user strings
  std::string what;    // as messages name it: "--seed", "the training data (--image-folder 'x')"
  std::string value;   // this run's value
  std::string fix;     // how to resume a checkpoint saved with another value
  // Recorded by every checkpoint the trainer ever wrote; the others came later (a checkpoint
  // without them is accepted with a warning: see check_run_record).
  bool in_every_checkpoint = false;
};

// This run's record: the model, --seed, the task's data and the steps per epoch (--limit-batches)
// (TrainTask::data_record). The task's data must be open (TrainTask::open_data).
std::vector<RunProperty> run_record(const TrainOptions& options, const TrainTask& task, const Schedule& schedule);

// The record as checkpoint user strings.
std::map<std::string, std::string> as_user_strings(const std::vector<RunProperty>& record);

// Throws strider::Error naming the first property `saved` (a checkpoint's user strings) holds
// with another value than `now`: what it is, both values and the fix. A property the checkpoint
// does not hold (one saved before it was recorded) cannot be checked; those are returned (their
// `what`), or refused when in_every_checkpoint.
std::vector<std::string> check_run_record(const std::string& checkpoint, const std::map<std::string, std::string>& saved,
                                          const std::vector<RunProperty>& now);

// A digest of bytes as 8 hex digits (CRC-32C): the tasks' data identity in the record.
class DataDigest {
 public:
  void add(const void* data, size_t bytes);
  void add(const std::string& text);  // with its length, so "ab","c" and "a","bc" differ
  void add(int64_t value);
  std::string hex() const;

 private:
  uint32_t crc_ = 0;
};

}  // namespace strider::tools
