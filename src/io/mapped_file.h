#pragma once
// A memory mapping of a whole regular file, shared by the tensors viewing it: a tensor's storage
// holds a shared_ptr to the mapping, so the bytes stay valid while any view lives.
#include <cstdint>
#include <memory>
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

class MappedFile {
 public:
  enum class Access { ReadOnly, CopyOnWrite, Read };
  // Maps `path` (an empty file maps to no bytes). CopyOnWrite is for bytes that tensors expose:
  // writing through them changes this process's pages only, never the file, but a page not yet
  // written still shows what another process writes to the file, and a truncation makes reading
  // it a SIGBUS. Read takes the bytes into this process's own memory (one read of the file) for
  // tensors that must not change when the file does (np.load's copy). ReadOnly is for readers
  // that only look, briefly (it commits no memory for private copies). Errors name `op` and the
  // path: a missing file, one that is not a regular file (a FIFO, a directory), a failed mmap, a
  // file that shrank while it was read.
  static std::shared_ptr<const MappedFile> open(const std::string& path, const char* op, Access access);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Writable under CopyOnWrite and Read.
  unsigned char* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  unsigned char* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

// A tensor viewing `bytes` (inside memory `owner` keeps alive: a mapping, a decompressed buffer)
// with this geometry; the tensor's storage holds `owner`. `bytes` must be aligned for `dtype`.
Tensor tensor_over_bytes(std::shared_ptr<const void> owner, unsigned char* bytes, IntArrayRef sizes, IntArrayRef strides,
                         ScalarType dtype);

}  // namespace strider::io
