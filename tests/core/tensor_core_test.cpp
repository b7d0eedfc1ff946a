// Storage, allocator counters, dtypes and the 16-bit float conversions.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace strider {
namespace {

TEST(Allocator, CountsCurrentAndPeakBytes) {
  const auto before = memory_stats();
  reset_peak_memory();
  {
    Tensor a = empty({1024, 256});  // 1 MiB
    EXPECT_EQ(memory_stats().current_bytes, before.current_bytes + 1024 * 256 * 4);
    Tensor b = a.view({256, 1024});  // a view allocates nothing
    EXPECT_EQ(memory_stats().current_bytes, before.current_bytes + 1024 * 256 * 4);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  }
  EXPECT_EQ(memory_stats().current_bytes, before.current_bytes);
  EXPECT_GE(memory_stats().peak_bytes, before.current_bytes + 1024 * 256 * 4);
  reset_peak_memory();
  EXPECT_EQ(memory_stats().peak_bytes, memory_stats().current_bytes);
}

// Activations of a few hundred KiB (ResNet-50's deeper layers at batch 1) must be reused, not
// handed back to glibc, which trims them off its heap and page-faults them in again every step.
TEST(Allocator, ReusesFreedBlocksFrom64KiB) {
  for (size_t bytes : {size_t{64} << 10, size_t{200} << 10, size_t{800} << 10, size_t{3} << 20}) {
    empty_cache();
    void* first = cpu_allocator().allocate(bytes);
    cpu_allocator().deallocate(first, bytes);
    EXPECT_GE(memory_stats().cached_bytes, static_cast<int64_t>(bytes)) << bytes << " bytes";
    void* second = cpu_allocator().allocate(bytes);
    EXPECT_EQ(second, first) << bytes << " bytes: a freed block of this size was not reused";
    EXPECT_EQ(memory_stats().cached_bytes, 0);
    cpu_allocator().deallocate(second, bytes);
  }
  empty_cache();
}

// reserved_bytes: large blocks held from the system, in use or cached; empty_cache gives the
// cached ones back.
TEST(Allocator, CountsTheBytesItHoldsFromTheSystem) {
  empty_cache();
  const size_t bytes = size_t{3} << 20;
  const int64_t before = memory_stats().reserved_bytes;
  void* block = cpu_allocator().allocate(bytes);
  EXPECT_EQ(memory_stats().reserved_bytes, before + static_cast<int64_t>(bytes));
  EXPECT_GE(memory_stats().peak_reserved_bytes, memory_stats().reserved_bytes);
  cpu_allocator().deallocate(block, bytes);
  EXPECT_EQ(memory_stats().reserved_bytes, before + static_cast<int64_t>(bytes));  // cached, still held
  void* again = cpu_allocator().allocate(bytes - 4096);  // reused (within 25%): no new bytes
  EXPECT_EQ(memory_stats().reserved_bytes, before + static_cast<int64_t>(bytes));
  cpu_allocator().deallocate(again, bytes - 4096);
  empty_cache();
  EXPECT_EQ(memory_stats().reserved_bytes, before);
}

// Blocks of 16 MiB and more are page extents: a freed block's pages serve requests of other
// sizes (split: two halves from one block; joined: one block from two, the pages moved with what
// they hold, not faulted afresh), so what the process holds follows the most bytes alive at once.
// Freed neighbours merge; every block is 2 MiB aligned.
TEST(Allocator, ServesLargeBlocksOfAnySizeFromFreedPages) {
  constexpr size_t kMiB = size_t{1} << 20;
  empty_cache();
  const int64_t base = memory_stats().reserved_bytes;
  auto reserved = [&] { return memory_stats().reserved_bytes - base; };
  auto fill = [](void* p, size_t n, int v) { std::memset(p, v, n); };
  auto holds = [](const void* p, size_t n, int v) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; i += 4096)
      if (b[i] != v) return false;
    return b[n - 1] == v;
  };
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % (2 * kMiB) == 0; };
  void* whole = cpu_allocator().allocate(64 * kMiB);
  EXPECT_TRUE(aligned(whole));
  fill(whole, 64 * kMiB, 1);
  EXPECT_EQ(reserved(), static_cast<int64_t>(64 * kMiB));
  cpu_allocator().deallocate(whole, 64 * kMiB);
  // Split: two 32 MiB blocks from the freed 64 MiB, no new memory; its pages still hold 1s.
  void* a = cpu_allocator().allocate(32 * kMiB);
  void* b = cpu_allocator().allocate(32 * kMiB);
  EXPECT_EQ(reserved(), static_cast<int64_t>(64 * kMiB));
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  EXPECT_TRUE(holds(a, 32 * kMiB, 1) && holds(b, 32 * kMiB, 1));
  fill(a, 32 * kMiB, 2);
  fill(b, 32 * kMiB, 2);
  // Joined: a 64 MiB block from two 32 MiB extents that are not neighbours (b's, and a new
  // block's), their pages moved.
  cpu_allocator().deallocate(a, 32 * kMiB);
  void* between = cpu_allocator().allocate(32 * kMiB);  // takes a's pages back
  EXPECT_EQ(between, a);
  void* c = cpu_allocator().allocate(32 * kMiB);  // new memory
  fill(c, 32 * kMiB, 2);
  cpu_allocator().deallocate(b, 32 * kMiB);
  cpu_allocator().deallocate(c, 32 * kMiB);
  EXPECT_EQ(reserved(), static_cast<int64_t>(96 * kMiB));
  void* joined = cpu_allocator().allocate(64 * kMiB);
  EXPECT_EQ(reserved(), static_cast<int64_t>(96 * kMiB));
  EXPECT_TRUE(aligned(joined));
  EXPECT_TRUE(holds(joined, 64 * kMiB, 2)) << "the joined block's pages were not the cached ones";
  fill(joined, 64 * kMiB, 4);
  EXPECT_TRUE(holds(joined, 64 * kMiB, 4));
  cpu_allocator().deallocate(joined, 64 * kMiB);
  cpu_allocator().deallocate(between, 32 * kMiB);
  // 96 MiB: the 64 MiB of the joined block and the 32 MiB freed beside nothing, joined again.
  void* bigger = cpu_allocator().allocate(96 * kMiB);
  EXPECT_EQ(reserved(), static_cast<int64_t>(96 * kMiB));
  fill(bigger, 96 * kMiB, 5);
  EXPECT_TRUE(holds(bigger, 96 * kMiB, 5));
  cpu_allocator().deallocate(bigger, 96 * kMiB);
  // Freed again as one block, it serves a 96 MiB request whole and a 128 MiB one with 32 MiB new.
  void* same = cpu_allocator().allocate(96 * kMiB);
  EXPECT_EQ(same, bigger);
  cpu_allocator().deallocate(same, 96 * kMiB);
  void* more = cpu_allocator().allocate(128 * kMiB);
  EXPECT_EQ(reserved(), static_cast<int64_t>(128 * kMiB));
  EXPECT_TRUE(holds(more, 96 * kMiB, 5));  // the cached pages first, then new ones
  fill(more, 128 * kMiB, 6);
  cpu_allocator().deallocate(more, 128 * kMiB);
  // An odd size rounds up to the 2 MiB granule; empty_cache gives every extent back.
  void* odd = cpu_allocator().allocate(17 * kMiB + 3);
  fill(odd, 17 * kMiB + 3, 7);
  cpu_allocator().deallocate(odd, 17 * kMiB + 3);
  EXPECT_EQ(reserved(), static_cast<int64_t>(128 * kMiB));
  empty_cache();
  EXPECT_EQ(reserved(), 0);
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  EXPECT_THROW(cpu_allocator().allocate(~size_t{0} - 8), Error);
}

TEST(Storage, ViewsShareAndOutliveTheBase) {
  Tensor v;
  {
    Tensor base = arange(12).reshape({3, 4});
    v = base.select(0, 2);
    EXPECT_EQ(v.storage(), base.storage());
    EXPECT_EQ(v.storage_offset(), 8);
  }
  EXPECT_EQ(v[3].item<int64_t>(), 11);
}

TEST(Storage, FromBlobWrapsWithoutCopyAndRunsDeleter) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  bool deleted = false;
  {
    Tensor t = from_blob(data, {2, 3}, kFloat, [&](void*) { deleted = true; });
    EXPECT_EQ(t.data_ptr<float>(), data);
    t.mul_(2.0);
    EXPECT_EQ(data[5], 12.0f);
  }
  EXPECT_TRUE(deleted);
}

TEST(ScalarTypes, NamesAndPromotion) {
  EXPECT_EQ(to_string(kBFloat16), "bfloat16");
  EXPECT_EQ(scalar_type_from_string("float64"), kDouble);
  EXPECT_THROW(scalar_type_from_string("complex64"), Error);
  EXPECT_EQ(promote_types(kLong, kFloat), kFloat);
  EXPECT_EQ(promote_types(kBFloat16, kHalf), kFloat);
  EXPECT_EQ(promote_types(kByte, kInt), kInt);
  EXPECT_EQ(promote_types(kBool, kByte), kByte);
  EXPECT_EQ(promote_types(kFloat, kDouble), kDouble);
}

TEST(ReducedFloats, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  // 1 + 2^-8 is exactly halfway between two bfloat16 values: ties go to even (1.0).
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 0x1p-7f + 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(INFINITY))));
}

TEST(ReducedFloats, HalfRoundTripsEveryHalfValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h;
    h.bits = static_cast<uint16_t>(bits);
    float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(Half(f).bits, h.bits) << bits;
  }
  EXPECT_EQ(static_cast<float>(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_EQ(static_cast<float>(Half(1e-8f)), 0.0f);
  EXPECT_EQ(static_cast<float>(Half(5.9604645e-8f)), 5.9604645e-8f);  // smallest subnormal
}

TEST(Generator, SameSeedSameNumbers) {
  Generator a(42), b(42);
  Tensor x = randn({100}, kFloat, &a), y = randn({100}, kFloat, &b);
  EXPECT_TRUE(equal(x, y));
  Generator c(43);
  EXPECT_FALSE(equal(x, randn({100}, kFloat, &c)));
  // Channels-last draws the same logical values.
  Generator d(7), e(7);
  Tensor cl = rand({2, 3, 4, 5}, TensorOptions().memory_format(MemoryFormat::ChannelsLast), &d);
  EXPECT_EQ(cl.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_TRUE(equal(cl, rand({2, 3, 4, 5}, {}, &e)));
}

// Re-seeding repeats the normals even after an odd number of draws left a Box-Muller spare
// (PyTorch resets its cached normal on manual_seed).
TEST(Generator, ReseedingRepeatsTheNormals) {
  Generator g(1);
  (void)randn({3}, kFloat, &g);
  g.manual_seed(1);
  const Tensor a = randn({3}, kFloat, &g);
  g.manual_seed(1);
  EXPECT_TRUE(equal(a, randn({3}, kFloat, &g)));
  manual_seed(0);
  const Tensor b = randn({5});
  manual_seed(0);
  EXPECT_TRUE(equal(b, randn({5})));
}

TEST(Generator, UniformAndNormalMoments) {
  Generator g(1);
  Tensor u = rand({100000}, kDouble, &g), n = randn({100000}, kDouble, &g);
  EXPECT_NEAR(mean(u).item<double>(), 0.5, 0.01);
  EXPECT_NEAR(mean(n).item<double>(), 0.0, 0.02);
  EXPECT_NEAR(var(n).item<double>(), 1.0, 0.02);
  EXPECT_GE(amin(u).item<double>(), 0.0);
  EXPECT_LT(amax(u).item<double>(), 1.0);
}

}  // namespace
}  // namespace strider
