#pragma once
// The offload tier: memory-mapped files on local disk (ZeRO-Infinity's NVMe offload on a machine
// without an accelerator). Sharded parameters, their gradients and (through *_like) the
// optimizer state are allocated here; evict() writes pages back and drops them from this
// process's resident memory until they are touched again.
#include <mutex>
#include <string>
#include <unordered_map>

#include "strider/core/allocator.h"
#include "strider/core/tensor.h"

namespace strider::fsdp::detail {

class OffloadTier final : public Allocator {
 public:
  // One tier per directory for the life of the process: tensors allocated in it (shards,
  // gradients, optimizer state) may outlive the FSDP object that created them.
  static OffloadTier* open(const std::string& directory);
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  bool propagates_to_like() const override { return true; }

  void evict(const Tensor& t);
  void evict_all();
  int64_t bytes() const { return bytes_; }

 private:
  explicit OffloadTier(std::string directory) : directory_(std::move(directory)) {}
  void evict_range(void* ptr, size_t nbytes);
  std::string directory_;
  std::mutex mutex_;
  std::unordered_map<void*, size_t> mappings_;  // address -> mapped length
  int64_t bytes_ = 0;
};

}  // namespace strider::fsdp::detail
