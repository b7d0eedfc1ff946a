#include "memory_overlap.h"

namespace strider::ops {
namespace {

enum class Overlap { No, Full, Partial, TooHard };

// Elements of t that share one memory location: certain only when a dim of size > 1 has stride 0.
bool overlaps_itself(const Tensor& t) {
  if (t.is_non_overlapping_and_dense()) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  return false;  // too hard to tell: allowed
}

Overlap overlap_between(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return Overlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return Overlap::No;
  if (!a.is_non_overlapping_and_dense() || !b.is_non_overlapping_and_dense()) return Overlap::TooHard;
  if (a.storage() != b.storage()) return Overlap::No;
  const auto* a_begin = static_cast<const char*>(a.data());
  const auto* b_begin = static_cast<const char*>(b.data());
  const char* a_end = a_begin + a.numel() * static_cast<int64_t>(a.element_size());
  const char* b_end = b_begin + b.numel() * static_cast<int64_t>(b.element_size());
  if (a_begin == b_begin && a_end == b_end) return a.strides() == b.strides() ? Overlap::Full : Overlap::Partial;
  return a_begin < b_end && b_begin < a_end ? Overlap::Partial : Overlap::No;
}

}  // namespace

void check_no_overlap(const char* op, const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  STRIDER_CHECK(!overlaps_itself(out), op, "unsupported operation: more than one element of the written-to tensor "
                "(shape ", out.sizes(), ", strides ", out.strides(), ") refers to a single memory location; clone() "
                "the tensor before writing into it");
  for (const Tensor* in : inputs)
    STRIDER_CHECK(!in->defined() || overlap_between(out, *in) != Overlap::Partial, op,
                  "unsupported operation: some elements of the input (shape ", in->sizes(), ", strides ",
                  in->strides(), ") and the written-to tensor (shape ", out.sizes(), ", strides ", out.strides(),
                  ") refer to a single memory location; clone() the input first");
}

}  // namespace strider::ops
