#pragma once
// Memory formats, exactly as PyTorch defines them. A format is never stored on a tensor: it is
// a stride pattern, asked of a tensor through is_contiguous(fmt) and suggest_memory_format(), and
// an argument telling an op how to lay out what it allocates. The logical order stays NCHW.
#include <cstdint>
#include <ostream>
#include <string_view>

namespace strider {

enum class MemoryFormat : int8_t {
  Contiguous,      // row-major (NCHW for 4-d)
  ChannelsLast,    // 4-d NCHW tensor stored as NHWC
  ChannelsLast3d,  // 5-d NCDHW tensor stored as NDHWC
  Preserve,        // "decide from the input": *_like, clone, to
};

// "contiguous", "channels_last", "channels_last_3d", "preserve".
std::string_view to_string(MemoryFormat f);
// Inverse of to_string; throws strider::Error naming the accepted spellings.
MemoryFormat memory_format_from_string(std::string_view name);
std::ostream& operator<<(std::ostream& os, MemoryFormat f);

}  // namespace strider
