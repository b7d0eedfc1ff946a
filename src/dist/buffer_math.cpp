#include "dist/buffer_math.h"

namespace strider::dist::detail {

void check_pieces(const Tensor& out, const Tensor& in, const std::vector<Piece>& pieces, int world) {
  STRIDER_CHECK(out.is_contiguous() && in.is_contiguous() && out.dtype() == in.dtype(), "all_gather_pieces",
                "needs contiguous tensors of one dtype, got ", out.dtype(), " and ", in.dtype());
  int64_t total = 0;
  for (const Piece& p : pieces) {
    STRIDER_CHECK(p.offset >= 0 && p.length >= 0 && p.offset + p.length * world <= out.numel(), "all_gather_pieces",
                  "piece at ", p.offset, " of ", p.length, " elements per rank does not fit an output of ",
                  out.numel(), " elements for ", world, " ranks");
    total += p.length;
  }
  STRIDER_CHECK(total == in.numel(), "all_gather_pieces", "pieces add up to ", total,
                " elements but this rank's input has ", in.numel());
}

void scatter_pieces(void* out, const void* segment, const std::vector<Piece>& pieces, int q, size_t item) {
  const char* src = static_cast<const char*>(segment);
  char* dst = static_cast<char*>(out);
  for (const Piece& p : pieces) {
    const size_t bytes = static_cast<size_t>(p.length) * item;
    std::memcpy(dst + static_cast<size_t>(p.offset + q * p.length) * item, src, bytes);
    src += bytes;
  }
}

}  // namespace strider::dist::detail
