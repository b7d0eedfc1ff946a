#pragma once
// The "__metadata__" of a whole-model safetensors file (save_full and consolidate_checkpoint
// write the same bytes). "format": "pt" is what Hugging Face's loaders look for (transformers'
// from_pretrained refuses a file whose format is not pt, tf, flax or mlx); strider's own fields
// sit beside it, its kind of file under "strider.format".
#include <cstdint>
#include <string>

#include "strider/io/safetensors.h"

namespace strider::checkpoint::detail {

inline io::Metadata export_metadata(int64_t step, const std::string& strategy, int64_t world_size) {
  return {{"format", "pt"},
          {"strider.format", "strider.consolidated"},
          {"step", std::to_string(step)},
          {"saved_as", strategy + " on " + std::to_string(world_size) + " ranks"}};
}

}  // namespace strider::checkpoint::detail
