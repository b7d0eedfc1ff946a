// The process's Context: one instance of each slot for every thread, per-thread state that a
// thread's guards change for that thread only, and release_caches() (empty_cache()) emptying
// every cache that holds memory.
#include <gtest/gtest.h>
#include <strider/ops/conv.h>
#include <strider/strider.h>

#include <thread>

namespace strider {
int twin_slot_value_in_other_file();  // context_twin_slot.cpp

namespace {

struct TwinSlot {
  int value = 1;
};

TEST(Context, SameNamedTypesInTwoFilesGetTwoSlots) {
  // clang's type_info calls these equal; keyed by typeid, both files would share one object.
  EXPECT_EQ(Context::process().slot<TwinSlot>().value, 1);
  EXPECT_EQ(twin_slot_value_in_other_file(), 2);
  EXPECT_EQ(Context::process().slot<TwinSlot>().value, 1);
}

struct Counter {
  int value = 0;
  int released = 0;
  void release() { ++released; }
};

TEST(Context, ASlotIsOnePerProcessWhicheverThreadAsks) {
  Counter* here = &Context::process().slot<Counter>();
  Counter* there = nullptr;
  std::thread([&] { there = &Context::process().slot<Counter>(); }).join();
  EXPECT_EQ(here, there);
  const int before = here->released;
  empty_cache();
  EXPECT_EQ(here->released, before + 1) << "release_caches() must call a slot's release()";
}

TEST(Context, ThreadStateBelongsToOneThread) {
  KernelPreferenceGuard ref(KernelPreference::Reference);
  NoGradGuard no_grad;
  KernelPreference other_pref = KernelPreference::Reference;
  bool other_grad = false;
  std::thread([&] {
    other_pref = kernel_preference();
    other_grad = autograd::GradMode::is_enabled();
  }).join();
  EXPECT_EQ(other_pref, KernelPreference::Fastest) << "a new thread starts with the defaults";
  EXPECT_TRUE(other_grad);
  EXPECT_EQ(kernel_preference(), KernelPreference::Reference);
  EXPECT_FALSE(autograd::GradMode::is_enabled());
}

TEST(Context, ProcessFlagsAreSharedByEveryThread) {
  MemoryFormatCheckGuard on(true);
  bool seen = false;
  std::thread([&] { seen = memory_format_check_enabled(); }).join();
  EXPECT_TRUE(seen);
}

TEST(Context, EmptyCacheReleasesOneDnnReorderedWeights) {
  manual_seed(3);
  NoGradGuard g;
  Tensor x = randn({2, 16, 9, 9}).contiguous(MemoryFormat::ChannelsLast);
  Tensor w = randn({32, 16, 3, 3});  // contiguous: oneDNN wants another layout, so it is cached
  (void)conv2d(x, w, Tensor(), {1}, {1});
  const int64_t cached = ops::conv_weight_cache_bytes();
  ASSERT_GT(cached, 0);
  const int64_t before = memory_stats().current_bytes;
  empty_cache();
  EXPECT_EQ(ops::conv_weight_cache_bytes(), 0);
  EXPECT_LE(memory_stats().current_bytes, before - cached);
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

}  // namespace
}  // namespace strider
