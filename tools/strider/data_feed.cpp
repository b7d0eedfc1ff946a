#include "data_feed.h"

namespace strider::tools {

void start_at_batch(data::DataLoader& loader, int64_t epoch, int64_t first_batch, int64_t global_batch) {
  loader.load_state({epoch, first_batch * global_batch});
}

std::optional<io::Batch> next_batch(data::DataLoader& loader, const std::string& input, const std::string& target) {
  std::optional<data::Batch> b = loader.next();
  if (!b) return std::nullopt;
  return io::Batch{b->at(input), b->at(target)};
}

}  // namespace strider::tools
