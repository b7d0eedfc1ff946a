#pragma once
// TensorImpl: sizes, strides, storage offset, dtype and a shared Storage. The six layout flags
// of SPEC §4.8 are recomputed on every geometry change, so predicates are plain reads.
#include <memory>

#include "strider/core/autograd_meta.h"
#include "strider/core/int_array_ref.h"
#include "strider/core/layout.h"
#include "strider/core/scalar_type.h"
#include "strider/core/storage.h"

namespace strider {

class TensorImpl {
 public:
  TensorImpl(Storage storage, ScalarType dtype, DimVector sizes, DimVector strides,
             int64_t storage_offset);

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  const Storage& storage() const { return storage_; }
  const layout::Flags& flags() const { return flags_; }

  // Throws for a tensor with elements but no memory (a deferred parameter not yet
  // materialized, or a parameter FSDP freed after use), which no op may read or write.
  void* data() const {
    if (storage_->data() == nullptr && numel_ > 0) [[unlikely]]
      throw_no_memory();
    return static_cast<char*>(storage_->data()) +
           storage_offset_ * static_cast<int64_t>(element_size(dtype_));
  }

  // Changes the geometry (views, resize_, as_strided_) and refreshes the cached flags.
  void set_sizes_and_strides(DimVector sizes, DimVector strides);
  void set_storage_offset(int64_t offset) { storage_offset_ = offset; }
  void set_storage(Storage storage) { storage_ = std::move(storage); }
  // Takes `other`'s storage, dtype and geometry, keeping this impl (and so every handle to it,
  // its autograd meta and hooks): PyTorch's `tensor.data = other`.
  void set_data(const TensorImpl& other);

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> m) { autograd_meta_ = std::move(m); }

 private:
  Storage storage_;
  ScalarType dtype_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
  layout::Flags flags_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
  [[noreturn]] void throw_no_memory() const;
};

}  // namespace strider
