#pragma once
// Ring collectives over MPI point-to-point: each of the N-1 steps sends one block to the right
// neighbour while receiving one from the left, so every byte crosses the transport once per
// step. OpenMPI 4.1's MPI_Reduce_scatter_block allocates and faults a temporary buffer on every
// call; this ring reuses one scratch buffer and runs near memcpy speed (bench/collectives_bench).
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "dist/comm_thread.h"
#include "strider/core/scalar_type.h"
#include "strider/dist/process_group.h"

namespace strider::dist::detail {

struct RingContext {
  MPI_Comm comm;
  int rank, size;
  RequestWaiter& waiter;
  std::vector<char>& scratch;  // grown on demand, reused across calls (reduce-scatters: two 8 MiB segments)
  std::atomic<int64_t>& bytes_sent;  // the group's counter of bytes this rank sent
};

// Block i of a buffer is elements [offsets[i], offsets[i+1]) (size+1 offsets; blocks may differ
// in length, which lets all_reduce split any element count).
using BlockOffsets = std::vector<int64_t>;
BlockOffsets even_blocks(int64_t block, int size);
BlockOffsets split_blocks(int64_t count, int size);

// out receives the reduction over all ranks of block `rank` of `in`: Sum, Max, or Avg (the sum
// scaled in the pass that writes it, with the bits of a sum followed by scale_in_place). `out`
// may alias block `rank` of `in`.
void ring_reduce_scatter(const RingContext& c, const void* in, void* out, const BlockOffsets& blocks,
                         ScalarType dtype, ReduceOp op);

// ring_reduce_scatter over a pieces layout (ProcessGroup::reduce_scatter_pieces_async): block q
// is rank q's pieces of `in`, read where they lie; `out` receives this rank's, back to back. The
// same additions in the same order as ring_reduce_scatter of the packed blocks; only the block
// sent first is copied (into the ring's buffer).
void ring_reduce_scatter_pieces(const RingContext& c, const void* in, const std::vector<Piece>& pieces, void* out,
                                ScalarType dtype, ReduceOp op);

// This rank's block is already in place; on return every block of `buffer` is filled.
void ring_all_gather(const RingContext& c, void* buffer, const BlockOffsets& blocks, ScalarType dtype);

// Sends `send` to rank `right` while receiving `recv` from rank `left` (in messages of at most
// 1 GiB; an empty side posts nothing).
void exchange(const RingContext& c, const char* send, int64_t send_bytes, char* recv, int64_t recv_bytes, int right,
              int left);

// Block q of `in` (block_bytes each) goes to rank q, block q of `out` comes from rank q: step s
// sends to rank+s while receiving from rank-s, so each pair of ranks exchanges once.
void pairwise_all_to_all(const RingContext& c, const void* in, void* out, int64_t block_bytes);

// all_gather_pieces: `in` is this rank's segment (its pieces back to back); every rank's segment
// travels around the ring, received straight into its pieces of `out` (an MPI datatype of the
// pieces) and forwarded from there, so no byte is copied twice. For segments of at most 1 GiB
// with at least one element (gathers_in_place); others take ring_all_gather_segments.
bool gathers_in_place(const std::vector<Piece>& pieces, size_t item);
void ring_all_gather_pieces(const RingContext& c, const void* in, void* out, const std::vector<Piece>& pieces,
                            size_t item);

// `in` is this rank's segment (its pieces back to back, `segment_bytes`); every rank's segment
// travels around the ring and is scattered into `out` as it passes (scatter(segment, q)).
void ring_all_gather_segments(const RingContext& c, const void* in, int64_t segment_bytes,
                              const std::function<void(const void* segment, int q)>& scatter);

}  // namespace strider::dist::detail
