#include "token_windows.h"

#include <strider/strider.h>

namespace strider::tools {

TokenWindows::TokenWindows(io::TokenFile file, int64_t begin, int64_t end, int64_t seq)
    : file_(std::move(file)), begin_(begin), end_(end), seq_(seq),
      windows_(end - begin > seq ? (end - begin - 1) / seq : 0) {}

data::Sample TokenWindows::get(int64_t index) const {
  STRIDER_CHECK(index >= 0 && index < windows_, "TokenWindows", "window ", index, " is outside the ", windows_,
                " windows of '", file_.path(), "'");
  Tensor w = file_.window(begin_ + index * seq_, seq_ + 1);
  return {{"input", w.narrow(0, 0, seq_).contiguous()}, {"target", w.narrow(0, 1, seq_).contiguous()}};
}

}  // namespace strider::tools
