// oneDNN's reordered weights are cached (ops/conv.h): every way the library writes a weight
// must make the next convolution see the new values, and the copies must go with their weight.
#include <gtest/gtest.h>
#include <strider/ops/conv.h>
#include <strider/ops/convert.h>
#include <strider/strider.h>

#include <functional>

#include "kernels/scratch.h"
#include "support/compare.h"

namespace strider {
namespace {

Tensor reference_conv(const Tensor& x, const Tensor& w) {
  KernelPreferenceGuard ref(KernelPreference::Reference);
  NoGradGuard g;
  return conv2d(x, w, Tensor(), {1}, {1});
}

void expect_fresh(const Tensor& x, const Tensor& w, const char* after) {
  NoGradGuard g;
  EXPECT_TRUE(testing::all_close(conv2d(x, w, Tensor(), {1}, {1}), reference_conv(x, w), 1e-4, 1e-4)) << "after " << after;
}

TEST(WeightCache, EveryWriteInvalidatesTheReorderedCopy) {
  manual_seed(1);
  Tensor x = randn({2, 16, 9, 9}).contiguous(MemoryFormat::ChannelsLast);
  Tensor w = randn({32, 16, 3, 3}).contiguous(MemoryFormat::ChannelsLast);
  expect_fresh(x, w, "the first call");
  const int64_t cached = ops::conv_weight_cache_bytes();
  expect_fresh(x, w, "a second call");
  EXPECT_EQ(ops::conv_weight_cache_bytes(), cached) << "the copy is reused, not made again";
  {
    NoGradGuard g;
    add_(w, 0.5);
  }
  expect_fresh(x, w, "an in-place add");
  ops::copy_(w, randn({32, 16, 3, 3}));
  expect_fresh(x, w, "ops::copy_");
  w.fill_(0.25);
  expect_fresh(x, w, "fill_");
  nn::init::normal_(w);
  expect_fresh(x, w, "nn::init::normal_");
  // A module's parameter, through load_state_dict and an optimizer step.
  nn::Conv2d conv({.in_channels = 16, .out_channels = 32, .kernel_size = {3}, .padding = {1}, .bias = false});
  conv.to(MemoryFormat::ChannelsLast);
  expect_fresh(x, conv.param("weight"), "construction");
  conv.load_state_dict({{"weight", randn({32, 16, 3, 3})}});
  expect_fresh(x, conv.param("weight"), "load_state_dict");
  optim::SGD opt(conv.named_parameters(), {.lr = 0.1});
  sum(conv(x)).backward();
  opt.step();
  expect_fresh(x, conv.param("weight"), "an optimizer step");
  // A collective writing into the weight (sync_module_states broadcasts in place).
  dist::SingleProcessGroup pg;
  pg.broadcast(conv.param("weight"), 0);
  expect_fresh(x, conv.param("weight"), "a broadcast");
  // Released and reallocated storage (FSDP frees and regathers its parameters this way).
  Tensor held = w.clone(MemoryFormat::ChannelsLast);
  expect_fresh(x, held, "a clone");
  held.storage()->release();
  held.storage()->reallocate(held.numel() * sizeof(float));
  std::fill_n(held.data_ptr<float>(), held.numel(), 1.0f);  // a raw write after reallocation
  expect_fresh(x, held, "release and reallocate");
}

TEST(WeightCache, CopiesAreCountedAndGoWithTheirWeight) {
  manual_seed(2);
  Tensor x = randn({1, 64, 8, 8}).contiguous(MemoryFormat::ChannelsLast);
  const int64_t before = ops::conv_weight_cache_bytes();
  {
    Tensor w = randn({64, 64, 3, 3}).contiguous(MemoryFormat::ChannelsLast);
    NoGradGuard g;
    const int64_t allocated = memory_stats().current_bytes;
    conv2d(x, w, Tensor(), {1}, {1});
    const int64_t copy = ops::conv_weight_cache_bytes() - before;
    if (copy == 0) GTEST_SKIP() << "oneDNN took this weight as it is (no reorder to cache)";
    EXPECT_GE(copy, w.nbytes());
    EXPECT_GE(memory_stats().current_bytes - allocated, copy) << "memory_stats() counts the cached copy";
  }
  EXPECT_EQ(ops::conv_weight_cache_bytes(), before) << "a dead weight's copy is freed";
}

TEST(OneDnnMemory, ScratchpadsComeFromStridersAllocator) {
  // Every primitive runs with a user-managed scratchpad taken from strider's allocator, so the
  // peak that memory_stats() reports covers it. Which primitives ask for one depends on the CPU:
  // a matmul with a large K may split it and a dilated plain-layout convolution unfolds its input
  // there (AVX-512); layer norm backward's per-thread sums are scratchpad on every ISA.
  manual_seed(2);
  struct Case {
    const char* what;
    std::function<Tensor()> run;
  };
  // Output rows of 20 pixels: on AMX narrower ones are matmuls (kernels/conv_as_matmul.h).
  Tensor x = randn({4, 32, 14, 20}).to(kBFloat16).contiguous(MemoryFormat::ChannelsLast);
  Tensor go = randn({4, 64, 14, 20}).to(kBFloat16).contiguous(MemoryFormat::ChannelsLast);
  Tensor a = randn({8, 4096}), b = randn({4096, 8});
  const Case cases[] = {
      {"conv2d backward weight (bfloat16)",
       [&] {
         ops::ConvArgs args;
         args.padding = {1};
         return std::get<1>(ops::convolution_backward(go, x, randn({64, 32, 3, 3}).to(kBFloat16), args, {false, true, false}));
       }},
      {"mm with K = 4096", [&] { return mm(a, b); }},
      {"layer norm backward", [&] {
         Tensor h = randn({64, 256}).requires_grad_(true);
         nn::functional::layer_norm(h, {256}).sum().backward();
         return h.grad();
       }},
      {"conv2d with dilation 2 (float32, plain layout)",
       [&] {
         ops::ConvArgs args;
         args.dilation = {2};
         return ops::convolution(randn({4, 32, 14, 14}), randn({16, 32, 3, 3}), Tensor(), args);
       }},
  };
  int with_scratchpad = 0;
  for (const Case& c : cases) {
    reset_peak_memory();
    const int64_t before = memory_stats().current_bytes;
    Tensor out = c.run();
    const int64_t scratchpad = kernels::last_onednn_scratchpad_bytes();
    if (scratchpad == 0) continue;
    ++with_scratchpad;
    EXPECT_GE(memory_stats().peak_bytes - before, scratchpad + out.nbytes()) << c.what;
  }
  EXPECT_GE(with_scratchpad, 1) << "no case asked for a scratchpad: the test checks nothing on this CPU";
}

}  // namespace
}  // namespace strider
