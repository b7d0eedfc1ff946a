#include "strider/core/memory_format.h"

#include <string>

#include "strider/core/error.h"

namespace strider {

std::string_view to_string(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "contiguous";
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::ChannelsLast3d: return "channels_last_3d";
    case MemoryFormat::Preserve: return "preserve";
  }
  return "unknown";
}

MemoryFormat memory_format_from_string(std::string_view name) {
  for (auto f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast,
                 MemoryFormat::ChannelsLast3d, MemoryFormat::Preserve})
    if (to_string(f) == name) return f;
  STRIDER_CHECK(false, "memory_format", "unknown memory format '", std::string(name),
                "'; use contiguous, channels_last, channels_last_3d or preserve");
  return MemoryFormat::Contiguous;
}

std::ostream& operator<<(std::ostream& os, MemoryFormat f) { return os << to_string(f); }

}  // namespace strider
