// Collectives against values computed locally, for several dtypes and uneven sizes. Runs under
// `mpirun -np N` (CTest runs 1 to 4 ranks) and as a plain process (world size 1).
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <chrono>
#include <thread>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

std::shared_ptr<dist::ProcessGroup>& pg = testing::world();

// A tensor whose element k on rank r is r * 100 + k (exact in every dtype used here).
Tensor rank_tensor(int64_t n, int rank, ScalarType dt) {
  return (arange(n).to(kDouble) + 100.0 * rank).to(dt);
}

TEST(Collectives, AllReduceSumAvgMax) {
  const int r = pg->rank(), w = pg->size();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kLong, kInt}) {
    for (int64_t n : {1, 7, 1000}) {
      Tensor t = rank_tensor(n, r, dt);
      pg->all_reduce(t, dist::ReduceOp::Sum);
      // sum_r (r*100 + k) = w*k + 100*w(w-1)/2
      Tensor expect = arange(n).to(kDouble) * static_cast<double>(w) + 100.0 * w * (w - 1) / 2.0;
      EXPECT_TRUE(testing::all_close(t, expect, dt == kBFloat16 ? 1e-2 : 0, 0)) << to_string(dt) << " n=" << n;
      Tensor m = rank_tensor(n, r, dt);
      pg->all_reduce(m, dist::ReduceOp::Max);
      EXPECT_TRUE(testing::all_close(m, arange(n).to(kDouble) + 100.0 * (w - 1), dt == kBFloat16 ? 1e-2 : 0, 0));
    }
  }
  Tensor a = rank_tensor(5, r, kFloat);
  pg->all_reduce(a, dist::ReduceOp::Avg);
  EXPECT_TRUE(testing::all_close(a, arange(5).to(kDouble) + 100.0 * (w - 1) / 2.0, 1e-6, 1e-6));
}

TEST(Collectives, AllGatherReduceScatterBroadcast) {
  const int r = pg->rank(), w = pg->size();
  for (ScalarType dt : {kFloat, kBFloat16, kLong, kByte}) {
    const int64_t n = 13;
    Tensor in = rank_tensor(n, r, dt == kByte ? kDouble : dt).to(dt == kByte ? kByte : dt);
    if (dt == kByte) in = (arange(n) + r).to(kByte);
    Tensor out = empty({w * n}, dt);
    pg->all_gather(out, in);
    for (int q = 0; q < w; ++q) {
      Tensor expect = dt == kByte ? (arange(n) + q).to(kDouble) : arange(n).to(kDouble) + 100.0 * q;
      EXPECT_TRUE(testing::all_close(out.narrow(0, q * n, n), expect.to(dt), 0, 0)) << to_string(dt) << " block " << q;
    }
  }
  // reduce_scatter: every rank contributes w blocks of 5; rank q keeps the sum of block q.
  Tensor big = arange(w * 5).to(kFloat) + 1000.0 * r;
  Tensor mine = empty({5});
  pg->reduce_scatter(mine, big, dist::ReduceOp::Sum);
  Tensor expect = (arange(5).to(kDouble) + 5.0 * r) * static_cast<double>(w) + 1000.0 * w * (w - 1) / 2.0;
  EXPECT_TRUE(testing::all_close(mine, expect, 0, 0));
  Tensor b = r == w - 1 ? full({4}, 7.0) : zeros({4});
  pg->broadcast(b, w - 1);
  EXPECT_TRUE(testing::all_close(b, full({4}, 7.0), 0, 0));
}

// all_to_all: block q of rank r's input, r * 1000 + q * 10 + k, arrives as block r at rank q;
// in the world and in a split group, for several dtypes; bad sizes are errors.
TEST(Collectives, AllToAllDeliversEachBlockToItsRank) {
  for (auto group : {pg, pg->split(pg->rank() % 2, pg->rank())}) {
    const int r = group->rank(), w = group->size();
    for (ScalarType dt : {kFloat, kLong, kBFloat16}) {
      const int64_t block = 6;
      Tensor in = empty({w * block}, kDouble);
      for (int q = 0; q < w; ++q)
        in.narrow(0, q * block, block).copy_(arange(block).to(kDouble) + (1000.0 * r + 10.0 * q));
      Tensor out = empty({w * block}, dt);
      group->all_to_all(out, in.to(dt));
      for (int q = 0; q < w; ++q)
        EXPECT_TRUE(testing::all_close(out.narrow(0, q * block, block),
                                       (arange(block).to(kDouble) + (1000.0 * q + 10.0 * r)).to(dt), 1e-2, 0))
            << to_string(dt) << " block from rank " << q;
    }
    if (w > 1) EXPECT_THROW(group->all_to_all(empty({w * 2 + 1}), empty({w * 2 + 1})), Error);
    EXPECT_THROW(group->all_to_all(empty({w * 2}), empty({w * 2}, kLong)), Error);
  }
}

// Every offset, negative and beyond the size included, in the world and in a split group.
TEST(Collectives, ShiftSendsToTheRankOffsetAhead) {
  for (auto group : {pg, pg->split(pg->rank() % 2, pg->rank())}) {
    const int r = group->rank(), w = group->size();
    for (int offset : {0, 1, 2, -1, w + 1}) {
      const Tensor in = arange(5).to(kDouble) + 100.0 * r, out = zeros({5}, kDouble);
      group->shift(out, in, offset);
      const int from = (((r - offset) % w) + w) % w;
      EXPECT_TRUE(testing::all_close(out, arange(5).to(kDouble) + 100.0 * from, 0, 0)) << "offset " << offset;
    }
    EXPECT_THROW(group->shift(empty({3}), empty({4}), 1), Error);
    EXPECT_THROW(group->shift(empty({3}), empty({3}, kLong), 1), Error);
  }
}

TEST(Collectives, AsyncOverlapsAndErrorsAreClear) {
  const int w = pg->size();
  Tensor a = ones({100000}), b = ones({3});
  auto wa = pg->all_reduce_async(a, dist::ReduceOp::Sum);
  auto wb = pg->all_reduce_async(b, dist::ReduceOp::Sum);
  Tensor local = exp(zeros({1000}));  // work while the collectives run
  wb->wait();
  wa->wait();
  EXPECT_TRUE(wa->is_completed());
  EXPECT_EQ(a[99999].item<double>(), w);
  EXPECT_EQ(b[0].item<double>(), w);
  EXPECT_THROW(pg->all_gather(empty({3}), ones({2})), Error);
  EXPECT_THROW(pg->all_reduce(ones({4, 8}).slice(1, 0, std::nullopt, 2), dist::ReduceOp::Sum), Error);  // gaps
  EXPECT_THROW(pg->broadcast(ones({1}), w), Error);
  pg->barrier();
}

// The block collectives move blocks of the logical order: a transposed or channels-last tensor
// (whose memory is in another order) is an Error naming the fix, where its storage order was sent
// (an all_gather of base.t() arrived as base); an input inside the output gathers in place when it
// is the rank's own block and is refused elsewhere; bool cannot be reduced (MPI would abort every
// rank); overlapping pieces are refused. The same rules in a world of one.
TEST(Collectives, BlockCollectivesTakeLogicalOrderAndRefuseWhatWouldBeWrong) {
  const int r = pg->rank(), w = pg->size();
  dist::SingleProcessGroup single;
  for (dist::ProcessGroup* g : {pg.get(), static_cast<dist::ProcessGroup*>(&single)}) {
    const int gw = g->size();
    Tensor base = arange(4).to(kFloat).view({2, 2});
    Tensor out = empty({gw * 4});
    EXPECT_THROW(g->all_gather(out, base.t()), Error);
    const Tensor channels_last_out = empty({gw, 1, 2, 2}).permute({0, 3, 1, 2});  // [gw, 2, 1, 2], dense, not row-major
    EXPECT_THROW(g->all_gather(channels_last_out, base), Error);
    EXPECT_THROW(g->reduce_scatter(empty({2, 2}), ones({2 * gw, 2}).t()), Error);
    EXPECT_THROW(g->all_to_all(empty({2, 2 * gw}).t(), ones({2 * gw, 2})), Error);
    EXPECT_THROW(g->all_reduce(ones({3}, kBool)), Error);
    EXPECT_THROW(g->reduce_scatter(empty({2}, kBool), ones({2 * gw}, kBool)), Error);
    g->all_gather(out, base.t().contiguous());  // the fix the message names
    EXPECT_EQ(testing::values(out.narrow(0, 0, 4)), (std::vector<double>{0, 2, 1, 3}));
  }
  // In place: the input is this rank's block of the output.
  const int64_t n = 3;
  Tensor gathered = empty({w * n});
  Tensor own = gathered.narrow(0, r * n, n);
  own.fill_(static_cast<double>(r));
  pg->all_gather(gathered, own);
  for (int q = 0; q < w; ++q) EXPECT_EQ(gathered[q * n + 1].item<double>(), q);
  if (w > 1) EXPECT_THROW(pg->all_gather(gathered, gathered.narrow(0, ((r + 1) % w) * n, n)), Error);
  // Two pieces covering the same elements.
  Tensor pieces_out = empty({2 * w}), segment = ones({2});
  EXPECT_THROW(pg->all_gather_pieces_async(pieces_out, segment, {{0, 1}, {0, 1}}), Error);
  pg->barrier();
}

// Ranks that pass different shard group sizes are named (split() alone built groups of sizes 1
// and 3 from sizes 1 and 2); lines that differ only in where their newlines fall differ.
TEST(Collectives, RanksThatDisagreeOnTheMeshOrOnLinesAreNamed) {
  const int r = pg->rank(), w = pg->size();
  if (w < 2) GTEST_SKIP() << "needs two ranks";
  EXPECT_THROW(dist::make_shard_replica_groups(*pg, r == 1 ? 1 : w), Error);
  const std::vector<std::string> lines = r == 1 ? std::vector<std::string>{"a\nb"} : std::vector<std::string>{"a", "b"};
  try {
    dist::check_same_across_ranks(*pg, "lines", lines);
    ADD_FAILURE() << "lines that differ passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a\\x0ab"), std::string::npos) << e.what();
  }
  pg->barrier();
}

#if STRIDER_WITH_MPI
// More collectives queued than one batch of signature checks compares (16), with the checks
// switched off and on again mid-stream (at the same point on every rank) and a split after them:
// every result is right, and the stream neither hangs nor mismatches the batched checks.
TEST(Collectives, LongQueuedStreamWithChecksSwitchedMidStream) {
  const int r = pg->rank(), w = pg->size();
  auto* mpi = dynamic_cast<dist::MpiProcessGroup*>(pg.get());
  ASSERT_NE(mpi, nullptr);
  std::vector<Tensor> bufs;
  std::vector<std::shared_ptr<dist::Work>> works;
  for (int i = 0; i < 40; ++i) {
    if (i == 10) mpi->set_signature_checks(false);
    if (i == 25) mpi->set_signature_checks(true);
    bufs.push_back(rank_tensor(1 + i % 5, r, kFloat));
    works.push_back(pg->all_reduce_async(bufs.back(), dist::ReduceOp::Sum));
  }
  auto sub = pg->split(r % 2, r);
  for (int i = 0; i < 40; ++i) {
    works[static_cast<size_t>(i)]->wait();
    const int64_t n = 1 + i % 5;
    Tensor expect = arange(n).to(kDouble) * static_cast<double>(w) + 100.0 * w * (w - 1) / 2.0;
    EXPECT_TRUE(testing::all_close(bufs[static_cast<size_t>(i)], expect, 0, 0)) << "collective " << i;
  }
  Tensor one = ones({1});
  sub->all_reduce(one, dist::ReduceOp::Sum);
  EXPECT_EQ(one.item<double>(), (w + 1 - r % 2) / 2);
}

// Every algorithm (OpenMPI's and the ring) against the same locally computed values, with
// element counts that do not split evenly across ranks.
TEST(Collectives, EveryAlgorithmAgreesOnUnevenSizes) {
  const int r = pg->rank(), w = pg->size();
  auto* mpi = dynamic_cast<dist::MpiProcessGroup*>(pg.get());
  ASSERT_NE(mpi, nullptr);
  for (dist::Algorithm algo : {dist::Algorithm::Mpi, dist::Algorithm::Ring}) {
    for (dist::Collective c : {dist::Collective::AllReduce, dist::Collective::AllGather, dist::Collective::ReduceScatter})
      mpi->set_algorithm(c, algo);
    const char* name = algo == dist::Algorithm::Mpi ? "mpi" : "ring";
    for (ScalarType dt : {kFloat, kDouble, kBFloat16, kInt}) {
      for (int64_t n : {1, 5, 1001, 70001}) {
        Tensor t = rank_tensor(n, r, dt);
        pg->all_reduce(t, dist::ReduceOp::Sum);
        Tensor expect = arange(n).to(kDouble) * static_cast<double>(w) + 100.0 * w * (w - 1) / 2.0;
        const double tol = dt == kBFloat16 ? 2e-2 : 0;
        EXPECT_TRUE(testing::all_close(t, expect, tol, tol)) << name << " all_reduce " << to_string(dt) << " n=" << n;
        Tensor m = rank_tensor(n, r, dt);
        pg->all_reduce(m, dist::ReduceOp::Max);
        EXPECT_TRUE(testing::all_close(m, arange(n).to(kDouble) + 100.0 * (w - 1), tol, 0)) << name << " max n=" << n;

        Tensor out = empty({w * n}, dt);
        pg->all_gather(out, rank_tensor(n, r, dt));
        for (int q = 0; q < w; ++q)
          EXPECT_TRUE(testing::all_close(out.narrow(0, q * n, n), rank_tensor(n, q, dt), 0, 0)) << name << " gather";

        Tensor big = (arange(w * n).to(kDouble) + 3.0 * r).to(dt);
        Tensor mine = empty({n}, dt);
        pg->reduce_scatter(mine, big, dist::ReduceOp::Avg);
        Tensor want = arange(n).to(kDouble) + static_cast<double>(n * r) + 3.0 * (w - 1) / 2.0;
        EXPECT_TRUE(testing::all_close(mine, want, dt == kBFloat16 ? 2e-2 : 1e-6, dt == kInt ? 1.0 : 1e-6))
            << name << " reduce_scatter " << to_string(dt) << " n=" << n;
      }
    }
  }
  for (dist::Collective c : {dist::Collective::AllReduce, dist::Collective::AllGather, dist::Collective::ReduceScatter})
    mpi->set_algorithm(c, dist::Algorithm::Auto);
}

// Ranks that queue at different paces post batches of signatures holding different numbers of
// collectives (rank 0 all 40 at once, the others a few at a time): a slot some rank left empty
// is compared in a later batch, and every collective still runs once, checked, with its result.
TEST(Collectives, StaggeredQueuesCompareTheirSignaturesInBatches) {
  const int r = pg->rank(), w = pg->size();
  std::vector<Tensor> bufs;
  std::vector<std::shared_ptr<dist::Work>> works;
  for (int i = 0; i < 40; ++i) {
    if (r > 0 && i % (r + 2) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2 * r));
    bufs.push_back(rank_tensor(1 + i % 3, r, kFloat));
    works.push_back(pg->all_reduce_async(bufs.back(), dist::ReduceOp::Sum));
  }
  for (int i = 0; i < 40; ++i) {
    works[static_cast<size_t>(i)]->wait();
    const int64_t n = 1 + i % 3;
    Tensor expect = arange(n).to(kDouble) * static_cast<double>(w) + 100.0 * w * (w - 1) / 2.0;
    EXPECT_TRUE(testing::all_close(bufs[static_cast<size_t>(i)], expect, 0, 0)) << "collective " << i;
  }
}
#endif

// Dim-0-sharded tensors of different sizes (one empty; in float32 one of 1.2 MB, more than
// MPI's eager messages) gathered in one collective.
TEST(Collectives, AllGatherPiecesPlacesEveryRanksPieces) {
  const int r = pg->rank(), w = pg->size();
  std::vector<dist::Piece> pieces;
  int64_t offset = 0;
  for (ScalarType dt : {kFloat, kBFloat16}) {
    const std::vector<int64_t> lengths =
        dt == kFloat ? std::vector<int64_t>{3, 0, 1, 300001, 17} : std::vector<int64_t>{3, 0, 1, 17};
    pieces.clear();
    offset = 0;
    for (int64_t len : lengths) {
      pieces.push_back({offset, len});
      offset += len * w;
    }
    // This rank's piece j holds 50*j + 20*r + k (exact in bfloat16).
    std::vector<Tensor> mine;
    for (size_t j = 0; j < lengths.size(); ++j)
      mine.push_back(arange(lengths[j]).to(kDouble) + (50.0 * j + 20.0 * r));
    Tensor in = cat(mine, 0).to(dt), out = full({offset}, -1.0, dt);
    pg->all_gather_pieces_async(out, in, pieces)->wait();
    for (size_t j = 0; j < lengths.size(); ++j)
      for (int q = 0; q < w; ++q) {
        Tensor expect = arange(lengths[j]).to(kDouble) + (50.0 * j + 20.0 * q);
        EXPECT_TRUE(testing::all_close(out.narrow(0, pieces[j].offset + q * lengths[j], lengths[j]), expect, 0, 0))
            << "piece " << j << " of rank " << q << " " << to_string(dt);
      }
  }
  EXPECT_THROW(pg->all_gather_pieces_async(empty({4}), ones({21}), pieces), Error);
}

// reduce_scatter_pieces must add exactly what reduce_scatter of the rank-major packing adds, in
// the same order: bitwise equal results on inputs whose float sums depend on the order, for
// every algorithm, with pieces of uneven lengths (one empty) and more than the ring's 1 MiB chunk.
TEST(Collectives, ReduceScatterPiecesEqualsReduceScatterOfThePackedBlocks) {
  const int r = pg->rank(), w = pg->size();
  const std::vector<int64_t> lengths = {3, 0, 17, 300001, 1};
  std::vector<dist::Piece> pieces;
  int64_t offset = 0, segment = 0;
  for (int64_t len : lengths) {
    pieces.push_back({offset, len});
    offset += len * w + 2;  // a gap: elements no piece covers
    segment += len;
  }
  Generator g(11 + r);
  auto run = [&](ScalarType dt, dist::ReduceOp op, const char* name) {
    Tensor in = (randn({offset}, {}, &g) * 1e3).to(dt);
    Tensor packed = empty({segment * w}, dt);
    for (int q = 0; q < w; ++q) {
      int64_t at = q * segment;
      for (size_t j = 0; j < pieces.size(); ++j) {
        packed.narrow(0, at, lengths[j]).copy_(in.narrow(0, pieces[j].offset + q * lengths[j], lengths[j]));
        at += lengths[j];
      }
    }
    Tensor want = empty({segment}, dt), got = full({segment}, -1.0, dt);
    pg->reduce_scatter(want, packed, op);
    pg->reduce_scatter_pieces_async(got, in, pieces, op)->wait();
    EXPECT_TRUE(testing::all_close(got, want, 0, 0)) << name << " " << to_string(dt);
  };
  for (ScalarType dt : {kFloat, kBFloat16})
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg}) {
#if STRIDER_WITH_MPI
      auto* mpi = dynamic_cast<dist::MpiProcessGroup*>(pg.get());
      ASSERT_NE(mpi, nullptr);
      for (dist::Algorithm algo : {dist::Algorithm::Mpi, dist::Algorithm::Ring}) {
        mpi->set_algorithm(dist::Collective::ReduceScatter, algo);
        run(dt, op, algo == dist::Algorithm::Mpi ? "mpi" : "ring");
      }
      mpi->set_algorithm(dist::Collective::ReduceScatter, dist::Algorithm::Auto);
#else
      run(dt, op, "single");
#endif
    }
  EXPECT_THROW(pg->reduce_scatter_pieces_async(empty({5}), ones({4}), {{0, 5}}, dist::ReduceOp::Sum), Error);
  EXPECT_THROW(pg->reduce_scatter_pieces_async(empty({4}), ones({w * 5}), {{0, 5}}, dist::ReduceOp::Sum), Error);
}

// The ring sends its partial sums a segment (8 MiB) of every block at a time: blocks of several
// segments and a part, uneven ones (an all-reduce of a count the ranks do not divide), and pieces
// whose blocks span segments, reduced exactly (small integers).
TEST(Collectives, RingReducesBlocksOfSeveralSegments) {
  const int r = pg->rank(), w = pg->size();
#if STRIDER_WITH_MPI
  auto* mpi = dynamic_cast<dist::MpiProcessGroup*>(pg.get());
  ASSERT_NE(mpi, nullptr);
  mpi->set_algorithm(dist::Collective::ReduceScatter, dist::Algorithm::Ring);
  mpi->set_algorithm(dist::Collective::AllReduce, dist::Algorithm::Ring);
#endif
  auto cycle = [](int64_t n) {  // k mod 7
    std::vector<double> v(static_cast<size_t>(n));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(k % 7);
    return tensor(v, kDouble);
  };
  auto values = [&](int64_t n, int rank) { return cycle(n) + static_cast<double>(rank); };
  auto sums = [&](int64_t n) { return cycle(n) * static_cast<double>(w) + w * (w - 1) / 2.0; };
  for (ScalarType dt : {kDouble, kFloat}) {
    const int64_t segment = (int64_t{8} << 20) / static_cast<int64_t>(element_size(dt));
    const int64_t block = segment + segment / 2 + 3;
    Tensor mine = full({block}, -1.0, dt);
    pg->reduce_scatter(mine, values(block * w, r).to(dt), dist::ReduceOp::Sum);
    EXPECT_TRUE(testing::all_close(mine, sums(block * w).narrow(0, r * block, block), 0, 0)) << to_string(dt);
    Tensor all = values(block * w + 1, r).to(dt);  // blocks of block and block + 1 elements
    pg->all_reduce(all, dist::ReduceOp::Sum);
    EXPECT_TRUE(testing::all_close(all, sums(block * w + 1), 0, 0)) << to_string(dt);
    // Pieces: rank q's block is its share of each piece, read where it lies.
    const std::vector<int64_t> lengths = {segment - 5, 11, segment + 9};
    std::vector<dist::Piece> pieces;
    int64_t offset = 0, share = 0;
    for (int64_t len : lengths) {
      pieces.push_back({offset, len});
      offset += len * w;
      share += len;
    }
    Tensor in = values(offset, r).to(dt), got = full({share}, -1.0, dt);
    pg->reduce_scatter_pieces_async(got, in, pieces, dist::ReduceOp::Sum)->wait();
    Tensor expect = sums(offset);
    int64_t at = 0;
    for (size_t j = 0; j < lengths.size(); ++j) {
      EXPECT_TRUE(testing::all_close(got.narrow(0, at, lengths[j]),
                                     expect.narrow(0, pieces[j].offset + r * lengths[j], lengths[j]), 0, 0))
          << "piece " << j << " " << to_string(dt);
      at += lengths[j];
    }
  }
#if STRIDER_WITH_MPI
  mpi->set_algorithm(dist::Collective::ReduceScatter, dist::Algorithm::Auto);
  mpi->set_algorithm(dist::Collective::AllReduce, dist::Algorithm::Auto);
#endif
}

// An average is the sum, rounded to the dtype, times 1 / size in double, rounded again: the ring
// scales in the pass that writes the sum, so its bits must be those of the sum scaled after it
// (values that round, so a second rounding or a float32 scale would show; at 3 ranks the scale is
// inexact), in every dtype, and in blocks of more than one of the ring's 8 MiB segments.
TEST(Collectives, AverageIsTheSumScaledOnce) {
  const int r = pg->rank(), w = pg->size();
  auto scaled = [&](const Tensor& sum) { return (sum.to(kDouble) * (1.0 / w)).to(sum.dtype()); };
  auto check = [&](ScalarType dt, int64_t n) {
    Generator gen(17 + r);
    Tensor normal = randn({n * w}, kDouble, &gen);
    Tensor values = (dt == kByte ? normal.abs() * 40.0 : is_floating_point(dt) ? normal : normal * 1e4).to(dt);
    const std::string name = detail::str(to_string(dt), " n=", n);
    Tensor sum = values.clone(), avg = values.clone();
    pg->all_reduce(sum, dist::ReduceOp::Sum);
    pg->all_reduce(avg, dist::ReduceOp::Avg);
    EXPECT_TRUE(testing::all_close(avg, scaled(sum), 0, 0)) << "all_reduce " << name;
    Tensor block_sum = empty({n}, dt), block_avg = empty({n}, dt);
    pg->reduce_scatter(block_sum, values, dist::ReduceOp::Sum);
    pg->reduce_scatter(block_avg, values, dist::ReduceOp::Avg);
    EXPECT_TRUE(testing::all_close(block_avg, scaled(block_sum), 0, 0)) << "reduce_scatter " << name;
    const int64_t head = n / 3;
    const std::vector<dist::Piece> pieces = {{0, head}, {head * w, n - head}};
    Tensor piece_avg = empty({n}, dt), packed = empty({n * w}, dt);
    pg->reduce_scatter_pieces_async(piece_avg, values, pieces, dist::ReduceOp::Avg)->wait();
    for (int q = 0; q < w; ++q) {
      packed.narrow(0, q * n, head).copy_(values.narrow(0, q * head, head));
      packed.narrow(0, q * n + head, n - head).copy_(values.narrow(0, head * w + q * (n - head), n - head));
    }
    Tensor piece_sum = empty({n}, dt);
    pg->reduce_scatter(piece_sum, packed, dist::ReduceOp::Sum);
    EXPECT_TRUE(testing::all_close(piece_avg, scaled(piece_sum), 0, 0)) << "reduce_scatter_pieces " << name;
  };
#if STRIDER_WITH_MPI
  auto* mpi = dynamic_cast<dist::MpiProcessGroup*>(pg.get());
  ASSERT_NE(mpi, nullptr);
  for (dist::Algorithm algo : {dist::Algorithm::Ring, dist::Algorithm::Mpi}) {
    mpi->set_algorithm(dist::Collective::ReduceScatter, algo);
    mpi->set_algorithm(dist::Collective::AllReduce, algo);
#endif
    for (ScalarType dt : {kFloat, kBFloat16, kHalf, kDouble, kLong, kInt, kByte}) check(dt, 3001);
    check(kFloat, (int64_t{8} << 20) / 4 + 1001);  // two segments a block
#if STRIDER_WITH_MPI
  }
  mpi->set_algorithm(dist::Collective::ReduceScatter, dist::Algorithm::Auto);
  mpi->set_algorithm(dist::Collective::AllReduce, dist::Algorithm::Auto);
#endif
}

TEST(Collectives, SingleProcessGroupIsTheIdentity) {
  dist::SingleProcessGroup single;
  Tensor t = arange(4).to(kFloat), out = empty({4});
  single.all_reduce(t, dist::ReduceOp::Avg);
  single.all_gather(out, t);
  EXPECT_TRUE(testing::all_close(out, arange(4).to(kFloat), 0, 0));
  EXPECT_THROW(single.broadcast(t, 1), Error);
}

// Subgroups from split: each collective over a group sees only its members, in key order.
TEST(Collectives, SplitGroupsRunCollectivesAmongTheirMembers) {
  const int r = pg->rank(), w = pg->size();
  // Even and odd ranks; keys reverse the order inside each group.
  auto g = pg->split(r % 2, -r);
  const int members = (w - r % 2 + 1) / 2;
  ASSERT_EQ(g->size(), members);
  EXPECT_EQ(g->rank(), members - 1 - r / 2);
  Tensor t = full({3}, static_cast<double>(r));
  g->all_reduce(t, dist::ReduceOp::Sum);
  double expect = 0;
  for (int q = r % 2; q < w; q += 2) expect += q;
  EXPECT_TRUE(testing::all_close(t, full({3}, expect), 0, 0));
  Tensor gathered = empty({2 * g->size()});
  g->all_gather(gathered, full({2}, static_cast<double>(r)));
  for (int k = 0; k < g->size(); ++k)  // group rank k is world rank (parity) + 2 * (members - 1 - k)
    EXPECT_EQ(gathered[2 * k].item<double>(), r % 2 + 2 * (members - 1 - k));
  Tensor mine = empty({2});
  g->reduce_scatter(mine, ones({2 * g->size()}), dist::ReduceOp::Sum);
  EXPECT_TRUE(testing::all_close(mine, full({2}, static_cast<double>(g->size())), 0, 0));
  g->barrier();
  pg->barrier();  // the world still works beside its groups
}

TEST(Collectives, ShardReplicaGroupsTileTheWorld) {
  const int w = pg->size(), r = pg->rank();
  const int s = w % 2 == 0 ? 2 : 1;
  dist::ShardReplicaGroups groups = dist::make_shard_replica_groups(*pg, s);
  EXPECT_EQ(groups.shard->size(), s);
  EXPECT_EQ(groups.replica->size(), w / s);
  EXPECT_EQ(groups.shard->rank(), r % s);
  EXPECT_EQ(groups.replica->rank(), r / s);
  // Reduce over shards then replicas: the world's sum.
  Tensor t = full({1}, static_cast<double>(r + 1));
  groups.shard->all_reduce(t);
  groups.replica->all_reduce(t);
  EXPECT_EQ(t.item<double>(), w * (w + 1) / 2.0);
  EXPECT_THROW(dist::make_shard_replica_groups(*pg, w + 1), Error);
  EXPECT_THROW(pg->split(-1, 0), Error);
}

}  // namespace
}  // namespace strider

