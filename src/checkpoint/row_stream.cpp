#include "checkpoint/row_stream.h"

#include <algorithm>
#include <vector>

namespace strider::checkpoint::detail {

void stream_rows(VerifiedReader& reader, const std::string& key, const TensorRecord& rec, int64_t begin, int64_t end,
                 const std::function<void(const void*, size_t)>& sink) {
  const uint64_t row_bytes = rec.row_bytes();
  if (row_bytes == 0 || begin >= end) return;
  const int64_t rows_per_piece = static_cast<int64_t>(std::max<uint64_t>(1, kRowStreamBytes / row_bytes));
  std::vector<char> buf;
  for (const ShardRecord& s : rec.shards) {
    for (int64_t a = std::max(begin, s.row_begin), stop = std::min(end, s.row_end); a < stop;) {
      const int64_t b = std::min(stop, a + rows_per_piece);
      const uint64_t n = static_cast<uint64_t>(b - a) * row_bytes;
      buf.resize(n);
      reader.read(s.file, s.offset + static_cast<uint64_t>(a - s.row_begin) * row_bytes, n, buf.data(),
                  "tensor '" + key + "' rows [" + std::to_string(a) + ", " + std::to_string(b) + ")");
      sink(buf.data(), n);
      a = b;
    }
  }
}

}  // namespace strider::checkpoint::detail
