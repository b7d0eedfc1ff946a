#pragma once
// Storage: the bytes behind one or more tensors. Views share it through shared ownership.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "strider/core/allocator.h"

namespace strider {

class StorageImpl {
 public:
  // Owns `nbytes` fresh bytes from `allocator`.
  StorageImpl(size_t nbytes, Allocator& allocator);
  // Wraps memory the caller owns (from_blob); `deleter` (may be empty) runs on destruction.
  StorageImpl(void* data, size_t nbytes, std::function<void(void*)> deleter);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  // The bytes, brought back first if a paging tier had moved them out (PagedBlock).
  // A retired storage throws an Error with the reason it was retired.
  void* data() const {
    if (paged_ && paged_->state.load(std::memory_order_acquire) != PagedBlock::Resident) [[unlikely]]
      allocator_->make_resident(*paged_);
    if (retired_) [[unlikely]] throw_retired();
    return data_;
  }
  // Where the bytes live, without bringing them back: for naming a storage, not for reading it.
  void* address() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool resizable() const { return allocator_ != nullptr; }
  // Grows the allocation to at least `nbytes`, keeping the old bytes (resize_).
  void grow(size_t nbytes);
  // Frees the bytes but keeps this storage (and every tensor viewing it) alive, so the same
  // tensors can be refilled later; FSDP frees gathered parameters this way while the autograd
  // graph still holds them, as PyTorch does by resizing the storage to zero.
  void release();
  // Allocates `nbytes` fresh (uninitialized) bytes for a released storage.
  void reallocate(size_t nbytes);
  // Frees the bytes for good: every later data() (and so every op on a tensor viewing it) is
  // an Error carrying `reason`. For values that moved elsewhere, so a handle kept from before
  // is named instead of silently stale (FSDP retires a parameter whose rows moved into shards:
  // an optimizer built before the wrap would otherwise step tensors nothing reads).
  void retire(std::string reason);
  // The reason given to retire(), or null while the storage is in use.
  const std::string* retired_reason() const { return retired_.get(); }
  // Marks these bytes as one process's part of tensors that are whole only across processes
  // (FSDP's shards), naming their owner: a value over the whole tensors (a gradient norm) needs
  // the owner's collective, and code that would compute it locally refuses, naming the owner.
  void mark_shard_of(std::string owner) { shard_of_ = std::make_unique<const std::string>(std::move(owner)); }
  const std::string* shard_of() const { return shard_of_.get(); }
  // Why an optimizer must not step tensors over these bytes right now ("" when it may), asked
  // by every optimizer step: a component still accumulating their gradients (deterministic
  // mode's micro-batches) sets it, so a step between micro-batches is named instead of silently
  // applying nothing.
  void set_step_check(std::function<std::string()> check) { step_check_ = std::move(check); }
  std::string step_refusal() const { return step_check_ ? step_check_() : std::string(); }
  bool has_step_check() const { return static_cast<bool>(step_check_); }
  Allocator* allocator() const { return allocator_; }

  // Bumped by every in-place write through the public API, so autograd can tell that a tensor
  // saved for backward was modified afterwards (shared by all views of the storage).
  uint64_t version() const { return version_; }
  void bump_version() {
    ++version_;
    bump_generation();
  }

  // Names these bytes' current contents, unique across all storages of the process: changed by
  // every write the library makes into existing tensors (in-place ops, copies, collectives,
  // reallocation), including the writes autograd must not see as modifications (FSDP
  // regathering its parameters). Caches of values derived from a tensor (oneDNN's reordered
  // weights) are valid while it is unchanged. Writes through data_ptr() must call it.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }
  void bump_generation();

 private:
  void attach_paged_block();
  [[noreturn]] void throw_retired() const;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Allocator* allocator_ = nullptr;
  PagedBlock* paged_ = nullptr;  // set when allocator_ pages this block out
  std::function<void(void*)> deleter_;
  std::unique_ptr<const std::string> retired_;
  std::unique_ptr<const std::string> shard_of_;
  std::function<std::string()> step_check_;
  uint64_t version_ = 0;
  std::atomic<uint64_t> generation_{0};  // read by a paging tier's writer thread
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace strider
