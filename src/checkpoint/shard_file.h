#pragma once
// One rank's file of a checkpoint: a safetensors file (readable by any safetensors reader)
// whose every block of bytes has a CRC-32C in the manifest, written with the checksums computed
// on the way out, and read back by byte range with every block it touches verified.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/rank_file_header.h"
#include "strider/checkpoint/manifest.h"
#include "strider/core/tensor.h"
#include "strider/io/safetensors_writer.h"

namespace strider::checkpoint::detail {

// Rows [row_begin, row_end) of the tensor `key` (whole shape `global_shape`), in any layout.
struct Piece {
  std::string key;
  Tensor data;
  DimVector global_shape;
  int64_t row_begin = 0, row_end = 0;
};

struct WrittenFile {
  FileRecord record;
  std::vector<uint64_t> offsets;  // where each piece's bytes start in the file
};

// "rank-00002-of-00004.safetensors"
std::string rank_file_name(int rank, int world);

// One tensor piece's place in a rank file: its key, dtype and shape (the rows it holds), and
// which rows of the whole tensor those are (recorded in the file's metadata, so a manifest that
// reads them as other rows is caught).
struct PieceLayout {
  std::string key;
  ScalarType dtype = kFloat;
  DimVector shape;
  int64_t row_begin = 0, row_end = 0;
};

// Streams a rank file: the header from the pieces' layouts, then each piece's bytes in order
// (pieces produced one at a time, so no more than one needs to exist at once).
class ShardFileWriter {
 public:
  ShardFileWriter(const std::string& dir, const std::string& name, const std::vector<PieceLayout>& pieces,
                  uint64_t block_bytes);
  void write(const void* bytes, size_t n) { writer_->write(bytes, n); }
  void write(const Tensor& t) { writer_->write(t); }
  WrittenFile finish();

 private:
  std::string name_;
  uint64_t block_bytes_;
  std::optional<io::SafetensorsWriter> writer_;
};

// Writes `pieces` to dir/name through a temporary (fsync, rename), in the order given.
WrittenFile write_shard_file(const std::string& dir, const std::string& name, const std::vector<Piece>& pieces,
                             uint64_t block_bytes);

// Reads byte ranges of a checkpoint's files. Opening a file checks that it is a regular file of
// the manifest's size, verifies the blocks of its header and checks the header against the
// manifest (rank_file_header.h); every read verifies the blocks it touches. Errors name the
// file, the block and the tensor being read.
class VerifiedReader {
 public:
  // every_file: refuse up front unless every listed file is present at its size (every reader of
  // a checkpoint); false for a snapshot store, which holds only some of the files by design.
  VerifiedReader(std::string dir, const Manifest& manifest, bool every_file = true);
  ~VerifiedReader();
  VerifiedReader(const VerifiedReader&) = delete;
  VerifiedReader& operator=(const VerifiedReader&) = delete;
  void read(int64_t file, uint64_t offset, uint64_t bytes, void* dst, const std::string& what);
  // Verifies every block of file `file` (ckpt verify).
  void verify_all(int64_t file);
  // Opens file `file` (the checks above) unless it is open already; returns its descriptor.
  int open(int64_t file);

 private:
  void check_block(int64_t file, uint64_t block, const char* data, const std::string& what) const;
  // "the header, tensor 'model/w', ..." for bytes [begin, end) of `file`.
  std::string block_contents(int64_t file, uint64_t begin, uint64_t end) const;
  std::string dir_;
  const Manifest& manifest_;
  std::vector<std::vector<ShardInFile>> shards_by_file_;
  std::map<int64_t, int> fds_;
  std::vector<char> scratch_;
};

}  // namespace strider::checkpoint::detail
