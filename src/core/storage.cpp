#include "strider/core/storage.h"

#include <atomic>
#include <cstring>

#include "strider/core/error.h"

namespace strider {

namespace {
std::atomic<uint64_t> g_next_generation{1};
}  // namespace

void StorageImpl::bump_generation() {
  generation_.store(g_next_generation.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
}

StorageImpl::StorageImpl(size_t nbytes, Allocator& allocator)
    : data_(allocator.allocate(nbytes)), nbytes_(nbytes), allocator_(&allocator) {
  attach_paged_block();
  bump_generation();
}

void StorageImpl::attach_paged_block() {
  paged_ = data_ ? allocator_->paged_block(data_) : nullptr;
  if (paged_) paged_->generation = &generation_;
}

StorageImpl::StorageImpl(void* data, size_t nbytes, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), deleter_(std::move(deleter)) {
  bump_generation();
}

StorageImpl::~StorageImpl() {
  if (allocator_) {
    allocator_->deallocate(data_, nbytes_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

void StorageImpl::grow(size_t nbytes) {
  if (nbytes <= nbytes_) return;
  STRIDER_CHECK(resizable(), "resize_",
                "cannot grow a storage that wraps external memory (from_blob) from ", nbytes_,
                " to ", nbytes, " bytes; clone() the tensor first");
  void* fresh = allocator_->allocate(nbytes);
  if (nbytes_) std::memcpy(fresh, data(), nbytes_);
  allocator_->deallocate(data_, nbytes_);
  data_ = fresh;
  nbytes_ = nbytes;
  attach_paged_block();
  bump_generation();
}

void StorageImpl::release() {
  STRIDER_CHECK(resizable(), "release", "cannot free a storage that wraps external memory (from_blob)");
  if (data_) allocator_->deallocate(data_, nbytes_);
  data_ = nullptr;
  nbytes_ = 0;
  paged_ = nullptr;
  bump_generation();
}

void StorageImpl::retire(std::string reason) {
  if (resizable()) release();
  retired_ = std::make_unique<const std::string>(std::move(reason));
}

void StorageImpl::throw_retired() const { throw Error(*retired_); }

void StorageImpl::reallocate(size_t nbytes) {
  STRIDER_CHECK(resizable(), "reallocate", "cannot allocate into a storage that wraps external memory");
  if (retired_) throw_retired();
  if (data_) allocator_->deallocate(data_, nbytes_);
  data_ = allocator_->allocate(nbytes);
  nbytes_ = nbytes;
  attach_paged_block();
  bump_generation();
}

}  // namespace strider
