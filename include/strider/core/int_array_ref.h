#pragma once
// IntArrayRef: a non-owning view of int64 dimensions (sizes, strides, dims), and DimVector,
// the owning container for them. Accepts braced lists, so `empty({10, 3, 32, 32})` works.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "strider/core/small_vector.h"

namespace strider {

// Sizes, strides and dimension lists: six dimensions inline covers NCDHW and then some.
using DimVector = SmallVector<int64_t, 6>;

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  // Like c10::ArrayRef: the braced list lives until the end of the full expression, which is
  // as long as a parameter of this type is used.
  // (GCC warns about every such constructor; clang has no such warning, and warns about the name.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<int64_t> list)
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}
  IntArrayRef(const DimVector& v) : data_(v.data()), size_(v.size()) {}
  constexpr IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  constexpr int64_t front() const { return data_[0]; }
  constexpr int64_t back() const { return data_[size_ - 1]; }
  DimVector vec() const { return DimVector(begin(), end()); }

  friend bool operator==(IntArrayRef a, IntArrayRef b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (a.data_[i] != b.data_[i]) return false;
    return true;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

// Prints as [2, 3, 4, 5], the way error messages show shapes and strides.
std::ostream& operator<<(std::ostream& os, IntArrayRef dims);

// The element count of a shape, checked: throws strider::Error naming `op` when a size is
// negative or when the count (or the product of the nonzero sizes, which bounds every dense
// stride) does not fit in int64.
int64_t checked_numel(IntArrayRef sizes, const char* op);

inline int64_t product(IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace strider
