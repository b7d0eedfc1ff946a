#pragma once
// The trainer's view of a data::DataLoader: a TrainTask's epoch and batch position as the
// loader's position, and its named batches as io::Batch (input, target).
#include <cstdint>
#include <optional>
#include <string>

#include <strider/data/data_loader.h>
#include <strider/io/data_loader.h>

namespace strider::tools {

// Positions `loader` at global batch `first_batch` of `epoch`. A data position counts global
// samples (data/position.h), so a step of `global_batch` samples resumes at any world size.
void start_at_batch(data::DataLoader& loader, int64_t epoch, int64_t first_batch, int64_t global_batch);

// The loader's next batch as {batch[input], batch[target]}; nullopt at the end of the epoch.
std::optional<io::Batch> next_batch(data::DataLoader& loader, const std::string& input, const std::string& target);

}  // namespace strider::tools
