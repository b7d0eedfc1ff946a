#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "strider/io/file_io.h"
#include "strider/ops/factory.h"

namespace strider::io {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, const char* op, Access access) {
  File f(path, O_RDONLY | O_NONBLOCK);  // a FIFO would block the open; fstat refuses it below
  STRIDER_CHECK(f.is_open(), op, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  STRIDER_CHECK(::fstat(f.fd(), &st) == 0, op, "cannot stat ", path, ": ", std::strerror(errno));
  STRIDER_CHECK(S_ISREG(st.st_mode), op, path, " is not a regular file (it is ", file_type_name(st.st_mode), ")");
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->path_ = path;
  m->size_ = static_cast<uint64_t>(st.st_size);
  if (m->size_ == 0) return m;
  if (access == Access::Read) {
    // Page-aligned anonymous memory, so data at an aligned file offset is aligned in memory too.
    void* p = ::mmap(nullptr, m->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    STRIDER_CHECK(p != MAP_FAILED, op, "cannot allocate ", m->size_, " bytes to read ", path, ": ", std::strerror(errno));
    m->data_ = static_cast<unsigned char*>(p);  // unmapped by the destructor if the read throws
    read_exact(f.fd(), m->data_, m->size_, 0, path, op);
    return m;
  }
  void* p = ::mmap(nullptr, m->size_, access == Access::CopyOnWrite ? PROT_READ | PROT_WRITE : PROT_READ, MAP_PRIVATE, f.fd(), 0);
  STRIDER_CHECK(p != MAP_FAILED, op, "cannot memory-map ", path, " (", m->size_, " bytes): ", std::strerror(errno));
  m->data_ = static_cast<unsigned char*>(p);
  return m;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Tensor tensor_over_bytes(std::shared_ptr<const void> owner, unsigned char* bytes, IntArrayRef sizes, IntArrayRef strides,
                         ScalarType dtype) {
  // An empty tensor may sit at the end of the mapping (or in an empty file): any non-null pointer.
  alignas(16) static unsigned char empty_anchor[16];
  void* p = bytes != nullptr ? bytes : empty_anchor;
  return from_blob(p, sizes, strides, dtype, [keep = std::move(owner)](void*) {});
}

}  // namespace strider::io
