#include "dist/buffer_math.h"

namespace strider::dist::detail {

void check_pieces(const Tensor& gathered, const Tensor& segment, const std::vector<Piece>& pieces, int world,
                  const char* op) {
  STRIDER_CHECK(gathered.is_contiguous() && segment.is_contiguous() && gathered.dtype() == segment.dtype(), op,
                "needs contiguous tensors of one dtype, got ", gathered.dtype(), " and ", segment.dtype());
  int64_t total = 0;
  for (const Piece& p : pieces) {
    STRIDER_CHECK(p.offset >= 0 && p.length >= 0 && p.offset + p.length * world <= gathered.numel(), op,
                  "piece at ", p.offset, " of ", p.length, " elements per rank does not fit a gathered buffer of ",
                  gathered.numel(), " elements for ", world, " ranks");
    total += p.length;
  }
  STRIDER_CHECK(total == segment.numel(), op, "pieces add up to ", total,
                " elements but this rank's segment has ", segment.numel());
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

void gather_pieces(void* segment, const void* in, const std::vector<Piece>& pieces, int q, size_t item) {
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(segment);
  for (const Piece& p : pieces) {
    const size_t bytes = static_cast<size_t>(p.length) * item;
    std::memcpy(dst, src + static_cast<size_t>(p.offset + q * p.length) * item, bytes);
    dst += bytes;
  }
}

}  // namespace strider::dist::detail
