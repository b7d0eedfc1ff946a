#include "dist/buffer_math.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace strider::dist::detail {

void check_block_layout(const Tensor& t, const char* op, const char* which) {
  STRIDER_CHECK(t.defined(), op, "the ", which, " tensor is undefined");
  STRIDER_CHECK(t.is_contiguous(), op, "its ", which, " of shape ", t.sizes(), " has strides ", t.strides(),
                ", not row-major: the ranks' blocks are blocks of the flattened logical order, so pass a contiguous "
                "tensor (.contiguous(), and copy the result into a tensor of another layout afterwards)");
}

bool gathers_in_place(const Tensor& out, const Tensor& in, int rank, const char* op) {
  if (in.numel() == 0) return false;
  const auto* in_bytes = static_cast<const char*>(in.data());
  const auto* out_bytes = static_cast<const char*>(out.data());
  if (in_bytes == out_bytes + rank * in.nbytes()) return true;
  STRIDER_CHECK(in_bytes + in.nbytes() <= out_bytes || in_bytes >= out_bytes + out.nbytes(), op,
                "the input lies inside the output but is not this rank's block (rank ", rank,
                "'s block starts at element ", rank * in.numel(), "); pass that block or a separate tensor");
  return false;
}

void check_reducible(ScalarType dtype, const char* op) {
  STRIDER_CHECK(dtype != kBool, op, "cannot reduce bool tensors (MPI has no sum or max over bool); convert to "
                "uint8 first (.to(kByte): max is 'any', sum counts) and back afterwards");
}

void check_same_layout(const Tensor& out, const Tensor& in, const char* op) {
  STRIDER_CHECK((out.is_contiguous() && in.is_contiguous()) || out.strides() == in.strides(), op,
                "the output's strides ", out.strides(), " and the input's ", in.strides(),
                " lay the elements out differently; pass tensors of one layout (.contiguous() both)");
}

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
  // Each piece covers [offset, offset + world * length) of the gathered buffer; two that overlap
  // would write the same elements twice.
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const Piece& p : pieces)
    if (p.length > 0) spans.emplace_back(p.offset, p.offset + p.length * world);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    STRIDER_CHECK(spans[i].first >= spans[i - 1].second, op, "the pieces at ", spans[i - 1].first, " and ",
                  spans[i].first, " overlap in the gathered buffer (", world, " ranks x their lengths)");
  if (gathered.numel() > 0 && segment.numel() > 0) {
    const auto* g = static_cast<const char*>(gathered.data());
    const auto* sg = static_cast<const char*>(segment.data());
    STRIDER_CHECK(sg + segment.nbytes() <= g || sg >= g + gathered.nbytes(), op,
                  "this rank's segment lies inside the gathered buffer; pass a separate tensor");
  }
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
