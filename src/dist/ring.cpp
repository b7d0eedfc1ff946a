#include "dist/ring.h"

#include <algorithm>
#include <optional>
#include <cstring>
#include <utility>

#include "dist/buffer_math.h"
#include "strider/core/dispatch.h"
#include "strider/core/reduced_float.h"

namespace strider::dist::detail {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// MPI counts are int: large blocks travel as several messages of at most 1 GiB.
constexpr int64_t kMaxMessageBytes = int64_t{1} << 30;

}  // namespace

void exchange(const RingContext& c, const char* send, int64_t send_bytes, char* recv, int64_t recv_bytes, int right,
              int left) {
  for (int64_t off = 0; off < std::max(send_bytes, recv_bytes); off += kMaxMessageBytes) {
    const int ns = static_cast<int>(std::clamp<int64_t>(send_bytes - off, 0, kMaxMessageBytes));
    const int nr = static_cast<int>(std::clamp<int64_t>(recv_bytes - off, 0, kMaxMessageBytes));
    // Send and receive lengths differ when blocks are uneven; empty messages are not posted, so
    // both neighbours agree on what travels.
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (nr > 0) MPI_Irecv(recv + off, nr, MPI_BYTE, left, 0, c.comm, &req[0]);
    if (ns > 0) MPI_Isend(send + off, ns, MPI_BYTE, right, 0, c.comm, &req[1]);
    c.bytes_sent += ns;
    c.waiter.wait(req, 2);
  }
}

namespace {

void exchange(const RingContext& c, const char* send, int64_t send_bytes, char* recv, int64_t recv_bytes) {
  exchange(c, send, send_bytes, recv, recv_bytes, mod(c.rank + 1, c.size), mod(c.rank - 1, c.size));
}

// Chunks of this size are posted together, so the reduction of one chunk overlaps the transfer
// of the next.
constexpr int64_t kChunkBytes = int64_t{1} << 20;

void reduce_blocks(void* dst, const void* a, const void* b, int64_t n, ScalarType dtype, ReduceOp op, double scale);

// Sends `send`, receives `count` elements from the left and, chunk by chunk as they land, has
// reduce(dst + at, recv + at, first element, elements) write received (op) mine into dst (dst
// may be the receive buffer).
template <class ReduceChunk>
void exchange_and_reduce(const RingContext& c, const char* send, int64_t send_bytes, char* recv, char* dst,
                         int64_t count, ScalarType dtype, ReduceChunk&& reduce) {
  const int right = mod(c.rank + 1, c.size), left = mod(c.rank - 1, c.size);
  const int64_t item = static_cast<int64_t>(element_size(dtype)), recv_bytes = count * item;
  const int64_t chunk = kChunkBytes / item * item;
  std::vector<MPI_Request> sends, recvs;
  c.bytes_sent += send_bytes;
  for (int64_t off = 0; off < send_bytes; off += chunk)
    MPI_Isend(send + off, static_cast<int>(std::min(chunk, send_bytes - off)), MPI_BYTE, right, 0, c.comm,
              &sends.emplace_back());
  for (int64_t off = 0; off < recv_bytes; off += chunk)
    MPI_Irecv(recv + off, static_cast<int>(std::min(chunk, recv_bytes - off)), MPI_BYTE, left, 0, c.comm,
              &recvs.emplace_back());
  for (size_t j = 0; j < recvs.size(); ++j) {
    c.waiter.wait(&recvs[j]);
    const int64_t off = static_cast<int64_t>(j) * chunk;
    const int64_t n = std::min(chunk, recv_bytes - off) / item;
    reduce(dst + off, recv + off, off / item, n);
  }
  if (!sends.empty()) c.waiter.wait(sends.data(), static_cast<int>(sends.size()));
}

// dst = a (op) b. A scale other than 1 (an average's last step) multiplies the sum, rounded to
// the dtype, in double and rounds again: the bits the sum and a pass of scale_in_place after it
// gave, in the pass that writes the sum.
void reduce_blocks(void* dst, const void* a, const void* b, int64_t n, ScalarType dtype, ReduceOp op, double scale) {
  dispatch_all(dtype, "reduce_scatter", [&]<class T>() {
    T* d = static_cast<T*>(dst);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < n; ++i) d[i] = x[i] || y[i];
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_integral_v<T>) {
      if (op == ReduceOp::Max) {
#pragma GCC ivdep
        for (int64_t i = 0; i < n; ++i) d[i] = x[i] > y[i] ? x[i] : y[i];
      } else if (scale == 1.0) {
#pragma GCC ivdep
        for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(x[i] + y[i]);
      } else {
#pragma GCC ivdep
        for (int64_t i = 0; i < n; ++i) {
          const T sum = static_cast<T>(x[i] + y[i]);
          store_as(d[i], static_cast<double>(sum) * scale);
        }
      }
    } else {  // bfloat16 / float16: through float32, rounded once per step
      for (int64_t i = 0; i < n; ++i) {
        const float p = static_cast<float>(x[i]), q = static_cast<float>(y[i]);
        store_as(d[i], op == ReduceOp::Max ? (p > q ? p : q) : p + q);
        if (scale != 1.0) store_as(d[i], static_cast<double>(static_cast<float>(d[i])) * scale);
      }
    }
  });
}

}  // namespace

BlockOffsets even_blocks(int64_t block, int size) {
  BlockOffsets o(static_cast<size_t>(size) + 1);
  for (int i = 0; i <= size; ++i) o[i] = block * i;
  return o;
}

BlockOffsets split_blocks(int64_t count, int size) {
  BlockOffsets o(static_cast<size_t>(size) + 1);
  const int64_t base = count / size, extra = count % size;
  for (int i = 0; i < size; ++i) o[i + 1] = o[i] + base + (i < extra ? 1 : 0);
  return o;
}

namespace {

// The partial sums go round the ring a segment of every block at a time (kSegmentBytes of each
// block's elements from `first`, N-1 steps, then the next ones), so the scratch is two segments
// whatever the block size: whole blocks kept two FSDP shards' worth of memory resident outside
// the allocator for the whole run (200 MB for 100 MB shards). Every element gets the same
// additions in the same order as with whole blocks.
constexpr int64_t kSegmentBytes = int64_t{8} << 20;

// length(b): block b's elements. mine(b, first): block b's elements from `first` where they lie
// contiguously, or null to have pack(dst, b, first, n) copy them. add(dst, recv, b, first, n):
// dst = recv (op) this rank's elements [first, first + n) of block b; last: the step that writes
// `out`.
template <class Length, class Mine, class Pack, class Add>
void segmented_ring_reduce_scatter(const RingContext& c, char* out, ScalarType dtype, Length&& length, Mine&& mine,
                                   Pack&& pack, Add&& add) {
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  int64_t largest = 0;
  for (int b = 0; b < c.size; ++b) largest = std::max(largest, length(b));
  const int64_t segment = std::max<int64_t>(1, kSegmentBytes / item);
  const int64_t buffer = std::min(largest, segment) * item;
  if (c.scratch.size() < static_cast<size_t>(2 * buffer)) c.scratch.resize(static_cast<size_t>(2 * buffer));
  for (int64_t first = 0; first < largest; first += segment) {
    auto part = [&](int b) { return std::clamp<int64_t>(length(b) - first, 0, segment); };
    // Two segment buffers: one travels right while the other is filled from the left.
    char* send = c.scratch.data();
    char* recv = c.scratch.data() + buffer;
    // Step s sends the partial sum of block (rank-s-1) (step 0: this rank's own elements of it)
    // and receives block (rank-s-2)'s; after N-1 steps the received block is this rank's own,
    // holding every other rank's contribution, added straight into `out`.
    for (int s = 0; s < c.size - 1; ++s) {
      const int sent = mod(c.rank - s - 1, c.size), got = mod(c.rank - s - 2, c.size);
      const char* from = send;
      if (s == 0 && part(sent) > 0 && !(from = mine(sent, first))) {
        pack(send, sent, first, part(sent));
        from = send;
      }
      // (A block with nothing left in this segment receives nothing: no pointer past its end.)
      const bool last = s == c.size - 2;
      char* dst = last && part(got) > 0 ? out + first * item : recv;
      exchange_and_reduce(c, from, part(sent) * item, recv, dst, part(got), dtype,
                          [&](char* d, const char* r, int64_t at, int64_t n) { add(d, r, got, first + at, n, last); });
      std::swap(send, recv);
    }
  }
}

// Avg is Sum with the last step's sums scaled by 1 / size.
ReduceOp base_op(ReduceOp op) { return op == ReduceOp::Avg ? ReduceOp::Sum : op; }
double last_scale(const RingContext& c, ReduceOp op) { return op == ReduceOp::Avg ? 1.0 / c.size : 1.0; }

}  // namespace

void ring_reduce_scatter(const RingContext& c, const void* in, void* out, const BlockOffsets& blocks,
                         ScalarType dtype, ReduceOp op) {
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  auto length = [&](int b) { return blocks[b + 1] - blocks[b]; };
  const char* src = static_cast<const char*>(in);
  if (c.size == 1) {  // an average of one is the value
    std::memmove(out, in, static_cast<size_t>(length(0) * item));
    return;
  }
  auto at = [&](int b, int64_t first) { return src + (blocks[b] + first) * item; };
  segmented_ring_reduce_scatter(
      c, static_cast<char*>(out), dtype, length, at, [](char*, int, int64_t, int64_t) {},
      [&](char* d, const char* r, int b, int64_t first, int64_t n, bool last) {
        reduce_blocks(d, r, at(b, first), n, dtype, base_op(op), last ? last_scale(c, op) : 1.0);
      });
}

void ring_reduce_scatter_pieces(const RingContext& c, const void* in, const std::vector<Piece>& pieces, void* out,
                                ScalarType dtype, ReduceOp op) {
  const size_t item = element_size(dtype);
  const char* base = static_cast<const char*>(in);
  int64_t length = 0;  // every block's: one rank's pieces
  for (const Piece& p : pieces) length += p.length;
  if (c.size == 1) {
    gather_pieces(out, in, pieces, 0, item);
    return;
  }
  // Block q is rank q's pieces of `in`, packed for sending and added run by run.
  segmented_ring_reduce_scatter(
      c, static_cast<char*>(out), dtype, [&](int) { return length; }, [](int, int64_t) -> const char* { return nullptr; },
      [&](char* dst, int b, int64_t first, int64_t n) {
        for_each_piece_run(base, pieces, b, first, n, item, [&](int64_t at, const char* run, int64_t k) {
          std::memcpy(dst + at * static_cast<int64_t>(item), run, static_cast<size_t>(k) * item);
        });
      },
      [&](char* d, const char* r, int b, int64_t first, int64_t n, bool last) {
        const double scale = last ? last_scale(c, op) : 1.0;
        for_each_piece_run(base, pieces, b, first, n, item, [&](int64_t at, const char* run, int64_t k) {
          reduce_blocks(d + at * static_cast<int64_t>(item), r + at * static_cast<int64_t>(item), run, k, dtype,
                        base_op(op), scale);
        });
      });
}

void ring_all_gather(const RingContext& c, void* buffer, const BlockOffsets& blocks, ScalarType dtype) {
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  char* base = static_cast<char*>(buffer);
  for (int s = 0; s < c.size - 1; ++s) {
    const int sb = mod(c.rank - s, c.size), rb = mod(c.rank - s - 1, c.size);
    exchange(c, base + blocks[sb] * item, (blocks[sb + 1] - blocks[sb]) * item, base + blocks[rb] * item,
             (blocks[rb + 1] - blocks[rb]) * item);
  }
}

void pairwise_all_to_all(const RingContext& c, const void* in, void* out, int64_t block_bytes) {
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  std::memcpy(dst + c.rank * block_bytes, src + c.rank * block_bytes, static_cast<size_t>(block_bytes));
  for (int s = 1; s < c.size; ++s) {
    const int to = mod(c.rank + s, c.size), from = mod(c.rank - s, c.size);
    exchange(c, src + to * block_bytes, block_bytes, dst + from * block_bytes, block_bytes, to, from);
  }
}

namespace {

// Rank q's pieces of a gathered buffer as one MPI datatype (byte displacements from its start),
// so a segment is received straight into place and forwarded from there.
class PiecesType {
 public:
  PiecesType(const std::vector<Piece>& pieces, int q, size_t item) {
    std::vector<int> lengths;
    std::vector<MPI_Aint> displacements;
    for (const Piece& p : pieces) {
      if (p.length == 0) continue;
      lengths.push_back(static_cast<int>(static_cast<size_t>(p.length) * item));
      displacements.push_back(static_cast<MPI_Aint>(static_cast<size_t>(p.offset + q * p.length) * item));
    }
    MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), displacements.data(), MPI_BYTE, &type_);
    MPI_Type_commit(&type_);
  }
  ~PiecesType() { MPI_Type_free(&type_); }
  PiecesType(const PiecesType&) = delete;
  PiecesType& operator=(const PiecesType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace

bool gathers_in_place(const std::vector<Piece>& pieces, size_t item) {
  int64_t total = 0;
  for (const Piece& p : pieces) total += p.length;
  return total > 0 && static_cast<int64_t>(static_cast<size_t>(total) * item) <= kMaxMessageBytes;
}

void ring_all_gather_pieces(const RingContext& c, const void* in, void* out, const std::vector<Piece>& pieces,
                            size_t item) {
  scatter_pieces(out, in, pieces, c.rank, item);
  if (c.size == 1) return;
  int64_t segment_bytes = 0;
  for (const Piece& p : pieces) segment_bytes += p.length * static_cast<int64_t>(item);
  const int right = mod(c.rank + 1, c.size), left = mod(c.rank - 1, c.size);
  // Step s forwards the segment of rank (rank-s) (step 0: our own, straight from `in`; later
  // ones from where the previous step put them) and receives rank (rank-s-1)'s into place.
  for (int s = 0; s < c.size - 1; ++s) {
    const PiecesType recv_type(pieces, mod(c.rank - s - 1, c.size), item);
    std::optional<PiecesType> send_type;
    if (s > 0) send_type.emplace(pieces, mod(c.rank - s, c.size), item);
    MPI_Request req[2];
    MPI_Irecv(out, 1, recv_type.get(), left, 0, c.comm, &req[0]);
    if (s == 0)
      MPI_Isend(in, static_cast<int>(segment_bytes), MPI_BYTE, right, 0, c.comm, &req[1]);
    else
      MPI_Isend(out, 1, send_type->get(), right, 0, c.comm, &req[1]);
    c.bytes_sent += segment_bytes;
    c.waiter.wait(req, 2);
  }
}

void ring_all_gather_segments(const RingContext& c, const void* in, int64_t segment_bytes,
                              const std::function<void(const void* segment, int q)>& scatter) {
  scatter(in, c.rank);
  if (c.size == 1) return;
  if (c.scratch.size() < static_cast<size_t>(2 * segment_bytes)) c.scratch.resize(static_cast<size_t>(2 * segment_bytes));
  char* send = c.scratch.data();
  char* recv = c.scratch.data() + segment_bytes;
  // Step s forwards the segment of rank (rank-s) (step 0: our own, straight from `in`) and
  // receives rank (rank-s-1)'s, then scatters it once that blocking exchange is done (the next
  // step starts after the scatter; nothing overlaps within a ring).
  for (int s = 0; s < c.size - 1; ++s) {
    exchange(c, s == 0 ? static_cast<const char*>(in) : send, segment_bytes, recv, segment_bytes);
    scatter(recv, mod(c.rank - s - 1, c.size));
    std::swap(send, recv);
  }
}

}  // namespace strider::dist::detail
